#include "runs/template_kwargs.h"

#include "engine/util/error.h"

namespace specscope::runs {

nlohmann::ordered_json parse_template_kwargs(const std::string& text, const std::string& what) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return nlohmann::ordered_json::object();
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(what, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object())
    throw InputError(what, "expected a JSON object of template variables, such as {\"enable_thinking\": false}");
  return j;
}

}  // namespace specscope::runs
