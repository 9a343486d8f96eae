#pragma once
// The numbers behind the statistics view and the live lane figures, computed from StepRecords. τ, acceptance by
// depth, the accepted-length histogram and the time split come from summarize() (the engine's one definition);
// this adds what only the views need: calibration bins and per-step series.
#include <string>
#include <vector>

#include "engine/generate/reply_parts.h"
#include "engine/methods/step_record.h"

namespace specscope::runs {

struct CalibrationBin {
  double lo = 0, hi = 0;        // draft-confidence range [lo, hi)
  long nodes = 0;               // verified nodes whose draft prob fell in the range
  double mean_confidence = 0;   // their mean draft prob
  double acceptance = 0;        // the fraction accepted
};

struct RunStatistics {
  std::vector<long> accepted_length_histogram;  // [k]: decoding steps that accepted k drafts
  std::vector<double> acceptance_by_depth;      // P(accepted at depth d | parent accepted, a node was tried)
  std::vector<CalibrationBin> calibration;      // 10 equal bins over [0, 1]
  std::vector<double> tokens_per_second;        // per step: committed tokens / step time
  std::vector<double> cumulative_seconds;       // per step: time since the first decoding step ended
  std::vector<int> step_index;                  // per step: the index in `steps` of tokens_per_second[i]'s step
  double draft_seconds = 0, verify_seconds = 0, other_seconds = 0;
  double tau = 0;          // summarize()'s τ over the same steps
  int decoding_steps = 0;  // summarize()'s steps (target forwards after the prefill)
};

// Steps first..last (inclusive) by index into a run's steps, as the inspector and its timeline count them. The
// default, and any part outside the run, is clamped to the whole run.
struct StepSpan {
  int first = 0;
  int last = -1;  // < 0: the run's last step
};

// `span` over a run of `step_count` steps as concrete indices: first clamped into the run, last < 0 or past the
// end made the run's last step. Empty (last < first) when the run has no steps or the span none of them.
StepSpan clamp_span(StepSpan span, int step_count);
// The steps `span` covers, copied (a selected range is a few hundred steps at most).
std::vector<StepRecord> steps_in_span(const std::vector<StepRecord>& steps, StepSpan span);

// Steps with no tree (vanilla) contribute only to time and throughput. The prefill step (root_token < 0)
// is skipped.
RunStatistics compute_statistics(const std::vector<StepRecord>& steps, int calibration_bins = 10);
// The same statistics over the steps of `span` only (a range selected on the timeline): one definition of each
// number, whole run or part.
RunStatistics compute_statistics(const std::vector<StepRecord>& steps, StepSpan span, int calibration_bins = 10);

// Generated tokens per second of the steps' own measured compute (draft + verify + KV update). Interleaved
// lanes wait for each other between steps, so this, not wall-clock time, is their throughput; the live lane
// figures use it too.
double compute_tokens_per_second(const std::vector<StepRecord>& steps);

// A reasoning model's run, its thinking apart from its answer: does speculation accept as much while the model
// reasons as while it answers? Each decoding step counts for the part its first visible text belongs to (a step
// that shows nothing, only markers, for the part it was in), so a step that crosses from thinking to the answer
// counts once, for the thinking.
struct ReplyPartFigures {
  int steps = 0;                 // decoding steps
  long tokens = 0;               // the tokens those steps committed
  double tau = 0;                // summarize()'s τ over them
  double tokens_per_second = 0;  // compute_tokens_per_second over them
};
struct ReplyPartStatistics {
  ReplyPartFigures reasoning, answer;
};
// `pieces[i]` is the text step i made visible (the runner's and the trace store's pieces).
ReplyPartStatistics reply_part_statistics(const std::vector<StepRecord>& steps, const std::vector<std::string>& pieces,
                                          const ReplyShape& shape);

}  // namespace specscope::runs
