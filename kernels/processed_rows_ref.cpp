// CPU reference of kernels/processed_rows.cu: the engine's own process_logits, with the launcher's output.
#include <algorithm>

#include "engine/sampling/sampler.h"
#include "kernels/kernel_refs.h"

namespace specscope::cuda::ref {

void process_row(const float* logits, int vocab, float temperature, int top_k, float top_p, float min_p,
                 ProcessedRow* out) {
  SamplingParams sp;
  sp.temperature = temperature;
  sp.top_k = top_k;
  sp.top_p = top_p;
  sp.min_p = min_p;
  const Distribution d = process_logits(logits, vocab, sp);
  if (int(d.size()) > kProcessedRowCap) {
    out->count = -1;
    return;
  }
  out->count = int32_t(d.size());
  std::copy(d.ids.begin(), d.ids.end(), out->ids);
  std::copy(d.probs.begin(), d.probs.end(), out->probs);
}

}  // namespace specscope::cuda::ref
