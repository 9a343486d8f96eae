#pragma once
// Trees sized for the device (`tree=auto`): EAGLE-2's authors tune total_tokens per GPU by hand; here it is done
// per model, drafter and machine. For each candidate size a short greedy calibration run measures the
// method's tau, the nodes it verifies per step, and the time of its drafting and of its verification as they ran;
// vanilla is calibrated on the same prompts. The candidate with the most expected tokens per second,
// tau / (verification + drafting), wins, and its expected speedup is that over vanilla's measured rate, with the
// term that makes it lose when it loses.
//
// Verification is timed in the run rather than read off the step-cost curve (step_cost.h), which times the target's
// forwards back to back with nothing between them: in a run a step's forward follows the method's own work
// (drafting, verification, the KV update), and on this 2-core machine the curve's figures and a run's steps
// disagree by 10-40% (both the one-token and the multi-token ones, varying with the machine's state). Chosen by the
// curve, tree=auto expected 1.52x for SpS (gamma 4) and measured 0.92x on the same prompts. The curve's figure stays
// beside the measured one in each trial (curve_verify_ms).
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/methods/factory.h"
#include "engine/model/backend.h"
#include "runs/step_cost.h"

namespace specscope::runs {

struct TreeTrial {
  std::map<std::string, std::string> options;
  double tau = 0, verify_tokens = 0, draft_ms = 0;  // per decoding step, measured
  // Per decoding step, measured: the target's forward over the tree, verification and the KV update. 0: not
  // measured (the curve's figure stands in).
  double verify_ms = 0;
  double curve_verify_ms = 0;    // cost(verify_tokens), from the curve: the same verification with the target alone
  double tokens_per_second = 0;  // tau / (verify_ms + draft_ms)
};

struct TreeChoice {
  std::map<std::string, std::string> options;  // the winner's
  double expected_speedup = 0;                 // its tokens/s over vanilla's (1 / cost(1))
  double expected_tokens_per_second = 0;       // the winner's, by the model above
  double vanilla_tokens_per_second = 0;        // 1000 / vanilla's measured ms per token (else cost(1))
  std::vector<TreeTrial> trials;
  std::string summary;                         // one line: the choice, its terms, and why it wins or loses
  // Where tune_tree's trials came from: "calibrated" now, "cached" (the cache folder), or "remembered" (this process
  // calibrated them earlier). Empty from choose_tree alone.
  std::string source;
};

// Whether `method` has sizes to tune (sps, pld, eagle1's static trees, eagle2, eagle3, lookahead, medusa, and
// streaming's streams and candidates per stream).
bool tree_tunable(const std::string& method);
// Whether the spec fixes one of the sizes the tuner would choose (e.g. gamma for sps): then tree=auto is not implied.
bool tree_size_given(const MethodSpec& spec);
// The sizes tried, smallest first.
std::vector<std::map<std::string, std::string>> tree_candidates(const std::string& method);
// The candidates of `spec`: its method's sizes; for SpS where the CPU has the kernels and the spec does not fix
// draft-weights, the chains cut by confidence again with draft-weights=int8 and again with int4; for EAGLE-2/3 the
// trees of at most 8 nodes again with head-weights=int4 (EAGLE-1: its chains, in tune_tree); and with
// spec.draft_alternatives each
// of those with each drafter (the spec's own first), the drafter under the key "draft".
std::vector<std::map<std::string, std::string>> tree_candidates(const MethodSpec& spec);
// Each candidate's method for `target` (a calibration runs them all): a candidate the target cannot run (InputError,
// e.g. more streams than a streaming model has) is dropped from `candidates`, with a log line; the method's own
// defaults (an empty candidate) must build, or the error propagates.
std::vector<std::unique_ptr<Method>> build_candidates(const MethodSpec& spec, const Model& target,
                                                      std::vector<std::map<std::string, std::string>>& candidates);
// Puts a choice's (or a candidate's) options into `spec`: "draft" becomes its draft_path (and clears the
// alternatives: the choice is made), every other key a method option.
void apply_tree_options(MethodSpec& spec, const std::map<std::string, std::string>& options);
// Options as one line for people: "key=value,..." in key order, a drafter by its folder's name (the run reports and
// logs, the app's status line).
std::string tree_options_text(const std::map<std::string, std::string>& options);

// Every candidate as calibrated, for reports: options (a drafter by its path), tau, verify_tokens, verify_ms,
// curve_verify_ms, draft_ms and tokens_per_second (expected), in the order tried.
nlohmann::json tree_trials_json(const TreeChoice& choice);

// Picks the candidate with the most expected tokens per second (pure: the trials are given). `vanilla_ms`: vanilla's
// measured time per token in the same calibration (0: cost(1) from the curve).
TreeChoice choose_tree(std::vector<TreeTrial> trials, const StepCost& cost, double vanilla_ms = 0);

// Whether a calibration was disturbed by other work (a build finishing, another process): vanilla's calibrated time
// per token more than kDisturbedCalibration times the steady-state curve's one-token step (a calibration right after
// a build read vanilla at 1.75 ms a token against the curve's 0.37, and chose a tree it expected at 2.19x).
bool calibration_disturbed(double vanilla_ms, const StepCost& cost);

// How a job calibrates: its first kCalibrationPrompts prompts, kCalibrationTokens new tokens each. Two prompts of 32
// were too few: on the shipped family (SpS, greedy, chat) the held-out set's first two gave tau 3.65 at gamma 4 and
// 3.94 at gamma 5, its first eight 2.86 and 2.99, all forty 2.89 and 3.07; calibrated on the two, tree=auto chose
// gamma 5, which raced at 1.01-1.05x against gamma 3-4's 1.06-1.09x over the forty. (A fixed set of everyday chat
// prompts instead was worse still on a family trained on dictionaries and manuals: tau 2.34 at gamma 4, and gamma 1
// chosen.)
inline constexpr int kCalibrationPrompts = 8;
inline constexpr int kCalibrationTokens = 24;

// Where in the answers a calibration reads. An answer's first tokens are the easiest to draft (they open with the
// same few phrases: "Another word for ..."), so a calibration on every answer's first 24 tokens saw EAGLE-3's
// 6-node tree at tau 3.30 where the same 8 prompts gave 2.69 over their whole answers (96 tokens at most, 64 on
// average) and the 80-prompt race 2.72. So prompt i is continued by vanilla's own greedy answer up to offset
// (i mod kCalibrationWindows) x new_tokens before the calibrated window starts: the windows tile the answers' first
// kCalibrationWindows x new_tokens tokens. A window that would start past an answer's last tokens starts so as to
// keep at least half a window of them; no window runs past n_ctx.
inline constexpr int kCalibrationWindows = 3;
// How many tokens of vanilla's answer the calibration asks for: enough for the last window's start and the half
// window after it, so that an answer this long was cut there, not ended, and its window starts where it should.
inline constexpr int calibration_answer_tokens(int new_tokens) {
  return (kCalibrationWindows - 1) * new_tokens + new_tokens / 2;
}
// The prompt of calibration window i: `prompt` followed by the first tokens of `answer` (vanilla's greedy answer to
// it, calibration_answer_tokens(new_tokens) long unless it ended), as described above.
std::vector<int32_t> calibration_window(const std::vector<int32_t>& prompt, const std::vector<int32_t>& answer,
                                        size_t i, int new_tokens, int n_ctx);

// Calibrates `spec` (its other options kept) on `prompts` (token ids; `new_tokens` each, greedy, in the windows
// above) and chooses.
// The choice is cached per target, drafter, method, backend and thread count, unless the calibration was disturbed;
// either way this process remembers it for kRememberCalibration, so that a busy machine does not pay a calibration
// (about 1.5 s a lane on the shipped family) before every run of a long-lived process such as the app's chat.
TreeChoice tune_tree(const Model& target, const MethodSpec& spec, Backend backend,
                     const std::vector<std::vector<int32_t>>& prompts, int new_tokens = kCalibrationTokens);
inline constexpr std::chrono::minutes kRememberCalibration{10};

}  // namespace specscope::runs
