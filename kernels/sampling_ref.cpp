// CPU reference of kernels/sampling.cu: the engine's own summary of a row (engine/sampling/logit_summary.h), row by
// row with the launcher's probe layout.
#include "engine/sampling/logit_summary.h"
#include "kernels/kernel_refs.h"

namespace specscope::cuda::ref {

void logit_summaries(const float* logits, int rows, int vocab, const int32_t* probe_start, const int32_t* probe_tokens,
                     LogitSummary* out, float* probe_probs) {
  for (int r = 0; r < rows; ++r) {
    const int begin = probe_start ? probe_start[r] : 0, end = probe_start ? probe_start[r + 1] : 0;
    summarize_logits(logits + int64_t(r) * vocab, vocab, probe_tokens + begin, end - begin, out[r],
                     probe_probs + begin);
  }
}

}  // namespace specscope::cuda::ref
