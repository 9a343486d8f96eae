#include "tests/pit_support.h"

#include <algorithm>

namespace specscope::test {

bool add_pit_samples(Context& ref, const std::vector<int32_t>& prompt, const std::vector<int32_t>& tokens,
                     const SamplingParams& sp, int vocab, int first, Rng& rng, std::vector<long>& bins) {
  ForwardOutput o;
  Batch pb = Batch::causal(prompt);
  pb.logit_rows = {int(prompt.size()) - 1};
  ref.forward(pb, o);
  for (size_t k = 0; k < tokens.size(); ++k) {
    const int32_t t = tokens[k];
    if (int(k) >= first) {
      Distribution d = process_logits(o.row_logits(0), vocab, sp);
      double below = 0, at = 0;
      for (size_t i = 0; i < d.size(); ++i) {
        if (d.ids[i] < t) below += d.probs[i];
        if (d.ids[i] == t) at = d.probs[i];
      }
      if (at <= 0.0) return false;
      const int bin = std::min(int(bins.size()) - 1, int((below + rng.uniform() * at) * double(bins.size())));
      bins[size_t(bin)]++;
    }
    ref.forward(Batch::causal(std::vector<int32_t>{t}), o);
  }
  return true;
}

}  // namespace specscope::test
