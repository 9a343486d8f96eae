#include "tests/pit_support.h"

#include <algorithm>

#include "engine/model/model.h"
#include "tests/test_support.h"

namespace specscope::test {

PitReference::PitReference(const Model& model, std::vector<int32_t> prompt, const SamplingParams& sp,
                           int max_tokens)
    : ctx_(model.new_cpu_context(int(prompt.size()) + max_tokens + 1)),
      prompt_(std::move(prompt)),
      sp_(sp),
      vocab_(model.config().vocab_size) {
  ForwardOutput o;
  Batch b = Batch::causal(prompt_);
  b.logit_rows = {int(prompt_.size()) - 1};
  ctx_->forward(b, o);
  first_ = process_logits(o.row_logits(0), vocab_, sp_);
}

bool PitReference::add(const std::vector<int32_t>& tokens, int first, Rng& rng, std::vector<long>& bins) {
  // Row k of the batch (token k) gives the conditional of token k + 1; token 0's comes from the prompt.
  ForwardOutput o;
  if (tokens.size() > 1) {
    ctx_->truncate(int(prompt_.size()));
    ctx_->forward(Batch::causal(std::vector<int32_t>(tokens.begin(), tokens.end() - 1)), o);
  }
  for (size_t k = size_t(std::max(first, 0)); k < tokens.size(); ++k) {
    const Distribution d = k == 0 ? first_ : process_logits(o.row_logits(int(k) - 1), vocab_, sp_);
    double below = 0, at = 0;
    for (size_t i = 0; i < d.size(); ++i) {
      if (d.ids[i] == tokens[k]) {
        at = d.probs[i];
        break;
      }
      below += d.probs[i];
    }
    if (at <= 0.0) return false;
    const int bin = std::min(int(bins.size()) - 1, int((below + rng.uniform() * at) * double(bins.size())));
    bins[size_t(bin)]++;
  }
  return true;
}

double pit_p_value(const std::vector<long>& bins) {
  return chi_square_test(bins, std::vector<double>(bins.size(), 1.0 / double(bins.size())));
}

}  // namespace specscope::test
