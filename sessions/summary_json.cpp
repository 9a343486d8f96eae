#include "sessions/summary_json.h"

#include "engine/methods/step_record_json.h"

namespace specscope::sessions {

nlohmann::json run_summary_json(const RunSummary& s, const GenerateResult& gen, const std::string& sampling,
                                const std::string& backend, const std::string& device) {
  nlohmann::json j = to_json(s);
  j["prompt_tokens"] = gen.prompt_tokens;
  j["prefill_tokens_per_second"] = gen.prefill_tokens_per_second();
  j["decode_tokens_per_second"] = gen.decode_tokens_per_second();
  j["sampling"] = sampling;
  j["backend"] = backend;
  if (!device.empty()) j["device"] = device;
  return j;
}

void add_reply_shape(nlohmann::json& summary, const ReplyShape& shape) {
  if (shape.format == ReplyFormat::Plain) return;
  summary["reply"] = {{"format", reply_format_name(shape.format)}, {"starts_in_reasoning", shape.starts_in_reasoning}};
}

ReplyShape recorded_reply_shape(const std::string& summary_json, std::string_view output_text) {
  const auto j = nlohmann::json::parse(summary_json, nullptr, false);
  if (j.is_object()) {
    const auto it = j.find("reply");
    if (it == j.end()) return reply_shape_of_text(output_text);
    if (it->is_object() && it->contains("format") && it->at("format").is_string())
      if (const auto format = reply_format_named(it->at("format").get<std::string>()))
        return {*format, it->value("starts_in_reasoning", false)};
  }
  return reply_shape_of_text(output_text);
}

}  // namespace specscope::sessions
