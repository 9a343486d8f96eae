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
// Medusa's candidates: `sparse`, its trees built from the heads' accuracies (tree-choices files named sparse_N.json,
// N nodes), and the trees of at most 16 nodes again with head-weights=int4 where the CPU has the kernel, unless the
// spec names the heads' weights.
std::vector<std::map<std::string, std::string>> medusa_tree_candidates(
    const MethodSpec& spec, std::vector<std::map<std::string, std::string>> sparse);
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

// Where in the answers a calibration reads. Drafting is easier in some answers and in some parts of an answer than in
// others (on the shipped family an answer's first 24 tokens run at SpS tau 3.4, its next 48 at 1.9-2.0), and a run's
// tau weighs every answer by its tokens: a long, hard answer counts four times as much as a short, easy one. So the
// calibration first asks vanilla for its greedy answers to the prompts (kCalibrationAnswerTokens long), and
// spreads its windows evenly over all their tokens, as a systematic sample: the k-th window (of one per prompt)
// centred on token (k + 1/2) x total / count of the answers laid end to end. A long answer may hold two windows and a
// short one none. Replayed from a recorded race over ten sets of eight held-out prompts
// (bench/calibration_windows_replay.py), windows at fixed offsets in every answer (0, 24 or 48 tokens, one per
// prompt) read tau 2-12% above what the same prompts raced at on average (SpS 12%, EAGLE-3 9%; one set 38% above);
// spread, 0.5-2.6% below, each set within -13..+12%. What remains is which eight prompts a job starts with: against
// all 80 prompts' tau, single sets read -20..+26%.
struct CalibrationWindow {
  size_t prompt = 0;  // which prompt's answer
  int offset = 0;     // the answer's tokens before the window (appended to the prompt)
};
// `count` windows of new_tokens over answers of the given lengths, in order; a window starts where a whole one fits in
// its answer when one does (else at the answer's start). No answers: one window at the start of each prompt.
std::vector<CalibrationWindow> calibration_windows(const std::vector<int>& answer_lengths, size_t count, int new_tokens);
// The prompt of a window: `prompt` followed by the first `offset` tokens of `answer`, fewer where the window's
// new_tokens would otherwise run past n_ctx.
std::vector<int32_t> calibration_window_prompt(const std::vector<int32_t>& prompt, const std::vector<int32_t>& answer,
                                               int offset, int new_tokens, int n_ctx);
// How long vanilla's answers are: the same for every job, so that one calibration serves a process whatever its runs'
// max_tokens (the app's chat asks 8 tokens of its first answer and 256 of the next; a choice keyed by the length
// calibrated again before the second, 1.9 s before its first words). 96 is the held-out races' length; the answer
// pass costs vanilla's time for count x 96 tokens at most (about 0.3 s for eight answers on the shipped family).
inline constexpr int kCalibrationAnswerTokens = 96;

// Calibrates `spec` (its other options kept) on `prompts` (token ids; windows of `new_tokens`, greedy, spread over
// vanilla's answers as above) and chooses.
// The choice is cached per target, drafter, method, backend and thread count, unless the calibration was disturbed;
// either way this process remembers it for kRememberCalibration, so that a busy machine does not pay a calibration
// (about 1.5 s a lane on the shipped family) before every run of a long-lived process such as the app's chat.
TreeChoice tune_tree(const Model& target, const MethodSpec& spec, Backend backend,
                     const std::vector<std::vector<int32_t>>& prompts, int new_tokens = kCalibrationTokens);
inline constexpr std::chrono::minutes kRememberCalibration{10};

}  // namespace specscope::runs
