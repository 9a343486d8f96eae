#pragma once
// One run as every view sees it: its steps as they arrive (live) or as read from a session (replay), the
// text each step made visible, and the summary once the run is over. Plain data, no Qt: the views draw it,
// the engine worker and the replay controller fill it (Tracy's split of data from UI).
#include <optional>
#include <string>
#include <vector>

#include "engine/methods/step_record.h"

namespace specscope::ui {

struct RunTrace {
  std::string method;                // e.g. "eagle2"
  std::vector<StepRecord> steps;
  std::vector<std::string> pieces;   // pieces[i]: the text step i made visible
  std::optional<RunSummary> summary; // set when the run finished
  bool greedy = true;
};

}  // namespace specscope::ui
