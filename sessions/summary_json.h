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

// A reasoning model's reply: how it marks its reasoning, as "reply": {"format": "think-tags", "starts_in_reasoning":
// true} (nothing for a plain reply). Recorded because the text alone cannot say it: a reply whose prompt opened
// the reasoning (DeepSeek-R1's) and that ends before "</think>" holds no marker at all.
void add_reply_shape(nlohmann::json& summary, const ReplyShape& shape);
// The shape of a recorded reply: as its summary says, or, for a run recorded before summaries said it (or one
// without a summary), from the markers its text holds.
ReplyShape recorded_reply_shape(const std::string& summary_json, std::string_view output_text);

}  // namespace specscope::sessions
