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

}  // namespace specscope::sessions
