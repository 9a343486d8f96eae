#pragma once
// What `run` prints, as functions of recorded data, so that `sessions replay` prints exactly what the live
// run printed.
#include <nlohmann/json.hpp>
#include <string>

#include "engine/methods/step_record.h"

namespace specscope::cli {

// The summary object `run --json` prints last (and the session store keeps).
nlohmann::json run_summary_json(const RunSummary& s, int prompt_tokens, double prefill_tps, double decode_tps,
                                const std::string& sampling, const std::string& backend);
// The line `run` prints to stderr after the text.
std::string run_footer(const nlohmann::json& summary);
// One StepRecord as `run --json` prints it (one line).
std::string step_json_line(const StepRecord& rec);
std::string json_line(const nlohmann::json& j);

}  // namespace specscope::cli
