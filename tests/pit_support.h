#pragma once
// The probability-integral-transform check of sampled outputs: for each generated token, where it falls in the
// model's exact conditional distribution given the run's own prefix, randomized within its own mass. The values
// are uniform on [0, 1) exactly when every token follows the model (Rosenblatt), which a chi-square over bins
// tests. Shared by the methods' and Speculative Streaming's sampling tests.
#include <cstdint>
#include <vector>

#include "engine/model/forward.h"
#include "engine/sampling/rng.h"
#include "engine/sampling/sampler.h"

namespace specscope::test {

// Runs `prompt` then `tokens` through `ref` (a fresh or truncated context of the model) and adds each token from
// index `first` on to `bins` (20 equal bins of the PIT). Returns false when a token lies outside the model's
// support (a certain failure).
bool add_pit_samples(Context& ref, const std::vector<int32_t>& prompt, const std::vector<int32_t>& tokens,
                     const SamplingParams& sp, int vocab, int first, Rng& rng, std::vector<long>& bins);

}  // namespace specscope::test
