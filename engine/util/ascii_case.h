#pragma once
// ASCII lower-casing, for matching names users and files spell in either case (GGUF file types, model names).
// Bytes above 127 pass through unchanged, so UTF-8 text stays valid.
#include <algorithm>
#include <cctype>
#include <string>

namespace specscope {

inline std::string ascii_lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

}  // namespace specscope
