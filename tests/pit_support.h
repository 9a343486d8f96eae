#pragma once
// The probability-integral-transform check of sampled outputs: each generated token is placed in the model's
// exact conditional distribution given the run's own prefix, randomized within its own mass. The values are
// i.i.d. uniform on [0, 1) exactly when every token follows the model (Rosenblatt), which a chi-square over
// equal bins tests. Used by the methods' sampling tests (method_sampling_test.cpp).
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/model/forward.h"
#include "engine/sampling/rng.h"
#include "engine/sampling/sampler.h"

namespace specscope {
class Model;
}

namespace specscope::test {

constexpr int kPitBins = 20;

// The exact conditionals of a model after one prompt. The prompt is forwarded once (as a decoding run's first
// forward is); each run's tokens are then forwarded in one batch after it, so checking a run costs one forward.
class PitReference {
 public:
  PitReference(const Model& model, std::vector<int32_t> prompt, const SamplingParams& sp, int max_tokens);
  // Adds to `bins` (kPitBins equal bins) the PIT of tokens[first..], each under the processed conditional given
  // the prompt and the tokens before it. Tokens are ordered by descending probability (the order sampling
  // uses), so a bias towards likely or unlikely tokens lands in the outer bins rather than spreading over token
  // ids. Returns false when a token lies outside its conditional's support (a certain failure).
  bool add(const std::vector<int32_t>& tokens, int first, Rng& rng, std::vector<long>& bins);
  const std::vector<int32_t>& prompt() const { return prompt_; }

 private:
  std::unique_ptr<Context> ctx_;
  std::vector<int32_t> prompt_;
  SamplingParams sp_;
  int vocab_;
  Distribution first_;  // the conditional of token 0
};

// The p-value of the PIT histogram against uniform (Pearson's chi-square, kPitBins - 1 degrees of freedom).
double pit_p_value(const std::vector<long>& bins);

}  // namespace specscope::test
