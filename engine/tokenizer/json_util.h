#pragma once
// Small helpers for reading tokenizer.json sections with errors that name the file and the field.
#include <string>

#include <nlohmann/json.hpp>

#include "engine/util/error.h"

namespace specscope::tok {

inline const nlohmann::json& field(const nlohmann::json& j, const char* key, const std::string& path,
                                   const std::string& ctx) {
  if (!j.is_object() || !j.contains(key)) throw InputError(path, ctx + " has no \"" + key + "\"");
  return j.at(key);
}

inline std::string str_field(const nlohmann::json& j, const char* key, const std::string& path,
                             const std::string& ctx) {
  const auto& v = field(j, key, path, ctx);
  if (!v.is_string()) throw InputError(path, ctx + " \"" + key + "\" is not a string");
  return v.get<std::string>();
}

inline bool bool_or(const nlohmann::json& j, const char* key, bool dflt) {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return dflt;
  return j.at(key).is_boolean() ? j.at(key).get<bool>() : dflt;
}

inline std::string type_of(const nlohmann::json& j, const std::string& path, const std::string& ctx) {
  if (!j.is_object()) throw InputError(path, ctx + " is not an object");
  return str_field(j, "type", path, ctx);
}

// A {"String": "..."} or {"Regex": "..."} pattern.
struct JsonPattern {
  bool is_regex = false;
  std::string text;
};
inline JsonPattern pattern_field(const nlohmann::json& j, const std::string& path, const std::string& ctx) {
  const auto& p = field(j, "pattern", path, ctx);
  if (p.is_object() && p.contains("String") && p.at("String").is_string())
    return {false, p.at("String").get<std::string>()};
  if (p.is_object() && p.contains("Regex") && p.at("Regex").is_string())
    return {true, p.at("Regex").get<std::string>()};
  throw InputError(path, ctx + " pattern is neither {\"String\": ...} nor {\"Regex\": ...}");
}

}  // namespace specscope::tok
