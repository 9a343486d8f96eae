#pragma once
// The summary a run records (RunOutcome::summary_json) and `run --json` prints last: the RunSummary plus the
// generation's prompt size, prefill/decode speeds, sampling, backend and device (e.g. "CUDA (NVIDIA H200, ...)"). One function for every recorder (CLI
// and app), so any recorded run replays through the same report code.
#include <nlohmann/json.hpp>
#include <string>

#include "engine/generate/generator.h"
#include "engine/methods/step_record.h"

namespace specscope::sessions {

nlohmann::json run_summary_json(const RunSummary& s, const GenerateResult& gen, const std::string& sampling,
                                const std::string& backend, const std::string& device = {});

}  // namespace specscope::sessions
