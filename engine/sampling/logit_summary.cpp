#include "engine/sampling/logit_summary.h"

#include <vector>

#include "engine/sampling/sampler.h"
#include "engine/sampling/top_k.h"

namespace specscope {

void summarize_logits(const float* logits, int vocab, const int32_t* probes, int n_probes, LogitSummary& summary,
                      float* probe_probs) {
  summary = LogitSummary{};
  if (vocab <= 0) return;
  const std::vector<float> probs = softmax_probs(logits, vocab);
  summary.argmax = argmax(logits, vocab);
  summary.argmax_prob = probs[size_t(summary.argmax)];
  for (int i : top_k_indices(probs.data(), vocab, kSummaryTopK)) {
    if (!(probs[size_t(i)] > 0)) continue;  // as the why panel's bars: underflowed tokens are not shown
    summary.top_ids[summary.top_count] = i;
    summary.top_probs[summary.top_count] = probs[size_t(i)];
    ++summary.top_count;
  }
  for (int j = 0; j < n_probes; ++j)
    probe_probs[j] = probes[j] >= 0 && probes[j] < vocab ? probs[size_t(probes[j])] : 0.f;
}

}  // namespace specscope
