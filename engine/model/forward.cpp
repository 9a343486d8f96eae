#include "engine/model/forward.h"

#include "engine/sampling/sampler.h"

namespace specscope {

int32_t ForwardOutput::row_argmax(int k) const {
  return summarized() ? summaries[size_t(k)].argmax : argmax(row_logits(k), vocab);
}

}  // namespace specscope
