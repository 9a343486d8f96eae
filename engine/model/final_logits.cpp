#include "engine/model/final_logits.h"

#include "engine/cpu/ops.h"

namespace specscope {

void finish_logits(const ModelConfig& c, float* logits, int64_t n) {
  if (c.logit_scale != 1.f) cpu::divide(logits, c.logit_scale, n);       // Granite
  if (c.final_soft_cap > 0.f) cpu::soft_cap(logits, c.final_soft_cap, n);  // Gemma 2
}

}  // namespace specscope
