#pragma once
// The cost model beside the statistics: why a run was (or was not) faster than vanilla, from this machine's
// step-cost curve (step_cost.h) and the run's recorded steps. A decoding step pays cost(target_tokens) to verify
// plus its measured drafting time, and commits accepted + 1 tokens; vanilla pays cost(1) per token. So a run's
// expected speedup is tau / ((mean verify cost + mean drafting cost) / cost(1)), the same model tree=auto
// (tree_tuner.h) chooses sizes by, and the sentence naming the term that makes a run lose is that model's too.
#include <string>
#include <vector>

#include "engine/methods/step_record.h"
#include "runs/run_statistics.h"
#include "runs/step_cost.h"

namespace specscope::runs {

struct StepCostBreakdown {
  int step = 0;               // the StepRecord's number
  int target_tokens = 0;      // tokens the target verified in the step (the tree's nodes + the root)
  double verify_ms = 0;       // cost(target_tokens), from the curve
  double draft_ms = 0;        // measured
  int tokens = 0;             // committed: accepted drafts + the bonus
  double expected_ms = 0;     // verify_ms + draft_ms
  double vanilla_ms = 0;      // tokens * cost(1): vanilla's time for the same tokens
  // A mixture-of-experts target: the experts its forward ran per expert layer (StepRecord::experts_per_layer); NaN
  // for a dense one.
  double experts_per_layer = kNoValue;
};

struct RunCostModel {
  std::vector<StepCostBreakdown> steps;  // decoding steps (the prefill left out)
  double cost1_ms = 0;                   // cost(1): one vanilla token
  double tau = 0;                        // mean accepted drafts + 1 per step
  double mean_verify_ms = 0, mean_draft_ms = 0, mean_target_tokens = 0;
  double expected_speedup = 0;           // tau / ((mean_verify_ms + mean_draft_ms) / cost1_ms); 0: no steps
  bool drafted = false;                  // some step verified more than one token or drafted (vanilla: no)
  // The target's forwards as they were timed in the run (StepTimings::verify_forward_us), mean per step, and their
  // ratio to the curve's cost for the same sizes; 0 when the steps carry no timings (older sessions).
  double mean_measured_verify_ms = 0, verify_vs_curve = 0;
  // The drafter's forwards as the steps timed them, split by a least-squares line through each step's drafting time
  // against its drafter forwards (StepRecord::draft_forwards): the first forward of a step, and each one after it.
  // 0 when the steps do not tell them apart (fewer than kMinStepsForForwardFit drafting steps, or every step with
  // the same number of forwards). On a CPU whose cache the target's weights fill, the first one is the dear one: the
  // drafter's weights left the cache during the target's forward (SpS on the shipped family, 2026-11-29: ~0.17 ms
  // against ~0.06-0.09 ms for the chain's next forwards, bench/results/cpu_sps_step_anatomy_2026-11-29/).
  double first_draft_forward_ms = 0, later_draft_forward_ms = 0;
  // A mixture-of-experts target: the experts its verifications ran per expert layer, mean over the steps that
  // recorded it; NaN for a dense target (or steps recorded before session schema 6). A verification batch reads
  // every expert any of its rows picked, so this, against the k one token picks, is why its cost(n) climbs faster
  // than a dense model's.
  double mean_experts_per_layer = kNoValue;
  // One sentence for a run that drafted: "Expected 0.65x (...): it loses on drafting: ..." naming the losing term
  // (losing_term) when the expected speedup is below 1, else "...: it wins, committing tau tokens in ...". When the
  // run's verifications took at least kColdVerification times the curve's cost, a second sentence says so and why;
  // when the drafter's first forward of a step cost at least kColdDrafter times its later ones, another says that;
  // on a mixture-of-experts target, another gives the experts a verification ran.
  // Empty for vanilla and for no steps.
  std::string verdict;
};

// From this ratio of measured to curve verification up, the verdict says the target ran slower in the run than
// alone. The curve is timed with the target alone, back to back; in a speculative run the drafter works between the
// target's forwards, and on a machine whose cache is shared with other work the target's weights are partly gone by
// then (bench --beside: 84-95% of the extra cost is that time away, runs/model_turns.h). Below 1.25 the gap is
// within this machine's run-to-run spread.
constexpr double kColdVerification = 1.25;

// From this ratio of the drafter's first forward of a step to its later ones up, the verdict says that the drafter
// starts each step cold, and why.
constexpr double kColdDrafter = 1.5;
constexpr int kMinStepsForForwardFit = 8;

// The one definition of the losing term (choose_tree's summary and the run verdict both use it): each step must
// commit tau tokens in less than tau vanilla tokens' time; drafting loses when it exceeds what verification
// spends beyond one vanilla forward. "it loses on drafting: the drafter alone takes 102% of the time the step may
// take" or "it loses on verification: checking the tree costs more than the tokens it saves".
std::string losing_term(double tau, double verify_ms, double draft_ms, double cost1_ms);

// One step's breakdown (a prefill step, root_token < 0, is still computed; model_run_cost leaves it out).
StepCostBreakdown step_breakdown(const StepRecord& step, const StepCost& cost);
// "verify 2.1 ms (7 tokens) + draft 0.9 ms for 3 tokens; vanilla would take 3.3 ms", and on a mixture of experts
// "; the forward ran 17.5 experts per layer"
std::string describe_step(const StepCostBreakdown& b);

RunCostModel model_run_cost(const std::vector<StepRecord>& steps, const StepCost& cost);
// The same model over the steps of `span` only (a range selected on a timeline): the expected speedup, its means
// and its verdict from those steps alone.
RunCostModel model_run_cost(const std::vector<StepRecord>& steps, StepSpan span, const StepCost& cost);

// The reference's generated tokens per second, as the run's speedup was measured against it:
// tokens_per_second / speedup_vs_vanilla. 0 when the run had no reference (speedup NaN) or no throughput.
double reference_tokens_per_second(const RunSummary& summary);
// The measured speedup of the steps of `span`: the tokens they committed over their own measured compute
// (compute_tokens_per_second, the steps' draft + verify + KV update time) against the reference's rate. A range
// has no wall-clock time of its own, so its steps' time stands for it. 0 when either rate is unknown.
double measured_speedup(const std::vector<StepRecord>& steps, StepSpan span, double reference_tokens_per_second);

}  // namespace specscope::runs
