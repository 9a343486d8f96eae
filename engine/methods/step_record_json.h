#pragma once
// JSON forms of StepRecord and RunSummary (CLI --json, session export, round-trip tests).
#include <nlohmann/json.hpp>

#include "engine/methods/step_record.h"

namespace specscope {

nlohmann::json to_json(const StepRecord& r);
nlohmann::json to_json(const RunSummary& s);

}  // namespace specscope
