#pragma once
// Turning logits into a token. The processed distribution (temperature, then top-k, top-p, min-p, in
// transformers' order) is exposed on its own because speculative verification compares the target's and the
// drafter's processed distributions, and both must be processed identically.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/sampling/rng.h"

namespace specscope {

struct SamplingParams {
  float temperature = 0.f;  // 0: greedy (argmax)
  int top_k = 0;            // 0: off
  float top_p = 1.f;        // 1: off
  float min_p = 0.f;        // 0: off
  uint64_t seed = 0;

  bool greedy() const { return temperature <= 0.f; }
  // Throws InputError("--temperature" etc.) for values outside their range.
  void validate() const;
  std::string describe() const;
};

// argmax with ties broken towards the lowest id, as torch.argmax does.
int32_t argmax(const float* logits, int n);

// A sparse probability distribution: the tokens with nonzero probability and their probabilities
// (summing to 1), in descending probability order.
struct Distribution {
  std::vector<int32_t> ids;
  std::vector<float> probs;
  float prob_of(int32_t id) const;  // 0 when absent
  size_t size() const { return ids.size(); }
};

// The distribution sampling draws from. Greedy params give a one-hot distribution on the argmax.
Distribution process_logits(const float* logits, int n, const SamplingParams& p);
// Softmax over the full vocabulary at temperature 1 (the model's raw distribution, for display).
std::vector<float> softmax_probs(const float* logits, int n);

// Inverse-CDF draw from a distribution with one uniform number.
int32_t sample_from(const Distribution& d, Rng& rng);
int32_t sample_token(const float* logits, int n, const SamplingParams& p, Rng& rng);

}  // namespace specscope
