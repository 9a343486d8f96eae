#pragma once
// The numbers behind the statistics view and the live lane figures, computed from StepRecords. τ, acceptance by
// depth, the accepted-length histogram and the time split come from summarize() (the engine's one definition);
// this adds what only the views need: calibration bins and per-step series.
#include <vector>

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
  double draft_seconds = 0, verify_seconds = 0, other_seconds = 0;
};

// Steps with no tree (vanilla) contribute only to time and throughput. The prefill step (root_token < 0)
// is skipped.
RunStatistics compute_statistics(const std::vector<StepRecord>& steps, int calibration_bins = 10);

// Generated tokens per second of the steps' own measured compute (draft + verify + KV update). Interleaved
// lanes wait for each other between steps, so this, not wall-clock time, is their throughput; the live lane
// figures use it too.
double compute_tokens_per_second(const std::vector<StepRecord>& steps);

}  // namespace specscope::runs
