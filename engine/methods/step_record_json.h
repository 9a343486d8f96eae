#pragma once
// JSON forms of StepRecord and RunSummary (CLI --json, session export, round-trip tests).
#include <nlohmann/json.hpp>

#include "engine/methods/step_record.h"

namespace specscope {

nlohmann::json to_json(const StepRecord& r);
// A top-k list as [[token, text, p], ...]; null when empty (not recorded).
nlohmann::json to_json(const std::vector<TokenProb>& bars);
nlohmann::json to_json(const RunSummary& s);

}  // namespace specscope
