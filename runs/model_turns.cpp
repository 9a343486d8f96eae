#include "runs/model_turns.h"

#include <chrono>

#include "engine/util/median.h"
#include "runs/step_cost.h"

namespace specscope::runs {

ModelTurns measure_model_turns(Context& target, const std::vector<int32_t>& target_tokens, int target_base,
                               Context& other, const std::vector<int32_t>& other_tokens, int other_base,
                               const std::vector<int>& sizes, int other_forwards, int rounds) {
  using clock = std::chrono::steady_clock;
  auto ms_since = [](clock::time_point t0) { return std::chrono::duration<double, std::milli>(clock::now() - t0).count(); };
  ModelTurns result;
  result.other_forwards = other_forwards;
  result.other_alone_ms = median(time_steps(other, other_tokens, 1, other_base, rounds));
  ForwardOutput out;
  for (int n : sizes) {
    TurnStep s;
    s.tokens = n;
    s.alone_ms = median(time_steps(target, target_tokens, n, target_base, rounds));
    Batch step;
    for (int i = 0; i < n; ++i) step.tokens.push_back(target_tokens[size_t(i) % target_tokens.size()]);
    std::vector<double> target_ms, other_ms, gap_ms;
    std::vector<std::vector<double>> by_position(static_cast<size_t>(other_forwards));
    auto time_target = [&](std::vector<double>& into) {
      const auto t0 = clock::now();
      target.forward(step, out);
      into.push_back(ms_since(t0));
      target.truncate(target_base);
    };
    for (int r = 0; r < rounds; ++r) {
      const auto turn0 = clock::now();
      for (int g = 0; g < other_forwards; ++g) {
        Batch one;
        one.tokens = {other_tokens[size_t(g) % other_tokens.size()]};
        const auto t0 = clock::now();
        other.forward(one, out);
        other_ms.push_back(ms_since(t0));
        by_position[size_t(g)].push_back(other_ms.back());
      }
      other.truncate(other_base);
      const double turn_ms = ms_since(turn0);
      time_target(target_ms);
      const auto gap0 = clock::now();
      while (ms_since(gap0) < turn_ms) {
      }
      time_target(gap_ms);
    }
    s.in_turns_ms = median(target_ms);
    s.other_in_turns_ms = median(other_ms);
    s.after_gap_ms = median(gap_ms);
    for (const auto& p : by_position) s.other_by_position_ms.push_back(median(p));
    result.steps.push_back(s);
  }
  return result;
}

}  // namespace specscope::runs
