#pragma once
// How values that are not plain SQL scalars are written into rows and read back: id lists as "3,5,9",
// timestamps as ISO-8601 UTC, the method spec as JSON, and the enums of StepRecord by name.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/methods/factory.h"
#include "engine/methods/step_record.h"

namespace specscope::sessions {

std::string join_ids(const std::vector<int>& ids);
// Throws InputError(where, ...) on anything but comma-separated integers.
std::vector<int> split_ids(const std::string& text, const std::string& where);

std::string utc_now_iso8601();

std::string method_to_json(const MethodSpec& spec);
MethodSpec method_from_json(const std::string& text, const std::string& where);

NodeSource node_source_from(const std::string& name, const std::string& where);
NodeDecision node_decision_from(const std::string& name, const std::string& where);
BonusSource bonus_source_from(const std::string& name, const std::string& where);

// RunSummary back from its JSON form (engine/methods/step_record_json.h's to_json).
RunSummary summary_from_json(const std::string& text, const std::string& where);

}  // namespace specscope::sessions
