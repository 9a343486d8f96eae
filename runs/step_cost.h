#pragma once
// This machine's n-token step-cost curve for one model and backend: the time of one target forward with n new
// tokens (all logits, as verification needs) at a given context, for n = 1, 2, 4, ... 64. Speculative decoding
// lives on this curve: a tree of n nodes pays cost(n + 1) per step instead of cost(1) per token. Measured once
// and cached per model, backend, device and thread count in $XDG_CACHE_HOME/specscope/step_cost/.
#include <string>
#include <utility>
#include <vector>

#include "engine/model/backend.h"
#include "engine/model/model.h"

namespace specscope::runs {

struct StepCost {
  int context = 0;                            // tokens already in the cache when measured
  std::vector<std::pair<int, double>> ms;     // (n, milliseconds), n ascending
  // Milliseconds for n new tokens: linear between measured points, extrapolated linearly past the last.
  double at(int n) const;
};

// The deterministic tokens benchmarks feed a model: `n` ordinary (non-special) ids of a `vocab`-token model.
std::vector<int32_t> benchmark_tokens(int vocab, int n);
// Times `timed` forwards of `n` new tokens (taken cyclically from `tokens`; every row's logits summarized, as greedy
// verification asks) on top of the cache's first `base` tokens, dropping them again each time. Untimed forwards of
// the same size run first for at least kWarmMs (and at least one), so neither a thread's wake-up nor the CPU's
// slower clock after other, heavier work counts. Milliseconds, in order.
constexpr double kWarmMs = 8.0;
// Forwards of `b` on top of the cache's first `base` tokens (dropped again) for at least kWarmMs, at least one.
void warm_up(Context& ctx, const Batch& b, int base);
std::vector<double> time_steps(Context& ctx, const std::vector<int32_t>& tokens, int n, int base, int timed);
// Greedy decoding's speed from where the cache is now: `tokens` one-token forwards, the first fed `first`, each next
// one the argmax of the last logits (asked for as a summary, as greedy decoding asks). Tokens per second; the tokens
// stay in the cache.
double decode_tokens_per_second(Context& ctx, int32_t first, int tokens);

// Medians of `repeat` timings per size (sizes interleaved round by round), after a prompt of benchmark_tokens().
StepCost measure_step_cost(const Model& model, Backend backend, int context = 128, int repeat = 7);
// How far a one-token forward may be from the curve's before one of the two was measured on a busy machine: a
// vanilla calibration slower than this many times the curve's one-token step is not cached (tree_tuner.h), and a
// cached curve whose one-token step is this many times slower than a forward timed now is measured again.
inline constexpr double kDisturbedCalibration = 1.6;
// The cached curve when one exists for this model, backend, device and thread count; else measured and cached.
// `measured` says which. A cached curve is checked first against a few one-token forwards timed now (tens of
// milliseconds on small models): one measured while the machine was busy (one cached right after
// scripts/setup-and-run.sh's build read a one-token step of 1.27 ms against ~0.37) would otherwise stand forever,
// and every choice made from it with it.
// A cache that cannot be written is not an error (the curve is still returned).
StepCost cached_step_cost(const Model& model, Backend backend, bool* measured = nullptr);
// What a measured curve (or a tree chosen from it) depends on besides the model: the backend, the device, the thread
// count and the kernels the model's products run on (their path and revision). The caches' key.
std::string compute_identity(const Model& model, Backend backend);
// $XDG_CACHE_HOME/specscope (or ~/.cache/specscope).
std::string cache_dir();

}  // namespace specscope::runs
