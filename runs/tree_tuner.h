#pragma once
// Trees sized for the device (`tree=auto`): EAGLE-2's authors tune total_tokens per GPU by hand; here it is done
// per model, drafter and machine. For each candidate size a short greedy calibration run measures the
// method's tau, the nodes it verifies per step and its drafting time; the step-cost curve (step_cost.h) gives the
// verification time of that many nodes; the candidate with the most expected tokens per second,
// tau / (cost(nodes + 1) + drafting), wins. Vanilla's is 1 / cost(1), so each choice comes with its expected
// speedup and, when it loses, the term that makes it lose.
#include <map>
#include <string>
#include <vector>

#include "engine/methods/factory.h"
#include "engine/model/backend.h"
#include "runs/step_cost.h"

namespace specscope::runs {

struct TreeTrial {
  std::map<std::string, std::string> options;
  double tau = 0, verify_tokens = 0, draft_ms = 0;  // per decoding step, measured
  double verify_ms = 0;                             // cost(verify_tokens), from the curve
  double tokens_per_second = 0;                     // tau / (verify_ms + draft_ms)
};

struct TreeChoice {
  std::map<std::string, std::string> options;  // the winner's
  double expected_speedup = 0;                 // its tokens/s over vanilla's (1 / cost(1))
  double expected_tokens_per_second = 0;       // the winner's, by the model above
  double vanilla_tokens_per_second = 0;        // 1000 / cost(1) ms
  std::vector<TreeTrial> trials;
  std::string summary;                         // one line: the choice, its terms, and why it wins or loses
};

// Whether `method` has sizes to tune (sps, pld, eagle1's static trees, eagle2, eagle3, lookahead, medusa); streaming
// keeps its own.
bool tree_tunable(const std::string& method);
// Whether the spec fixes one of the sizes the tuner would choose (e.g. gamma for sps): then tree=auto is not implied.
bool tree_size_given(const MethodSpec& spec);
// The sizes tried, smallest first.
std::vector<std::map<std::string, std::string>> tree_candidates(const std::string& method);

// Picks the candidate with the most expected tokens per second (pure: the trials are given).
TreeChoice choose_tree(std::vector<TreeTrial> trials, const StepCost& cost);

// Calibrates `spec` (its other options kept) on `prompts` (token ids, `new_tokens` each, greedy) and chooses.
// The choice is cached per target, drafter, method, backend and thread count.
TreeChoice tune_tree(const Model& target, const MethodSpec& spec, Backend backend,
                     const std::vector<std::vector<int32_t>>& prompts, int new_tokens = 32);

}  // namespace specscope::runs
