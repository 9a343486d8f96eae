#pragma once
// Extra chat-template variables as users type them, for the CLI's --chat-template-kwargs and the app's Settings
// alike: one JSON object, as llama.cpp's flag of that name takes it ('{"enable_thinking": false}' for Qwen3).
#include <string>

#include <nlohmann/json.hpp>

namespace specscope::runs {

// "" (or only spaces) -> an empty object. Throws InputError(`what`, ...) for invalid JSON or anything but an object.
nlohmann::ordered_json parse_template_kwargs(const std::string& text, const std::string& what);

}  // namespace specscope::runs
