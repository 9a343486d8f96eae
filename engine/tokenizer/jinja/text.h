#pragma once
// Python str semantics on UTF-8 text, as chat templates use them: lengths, indexes and slices count code points,
// strip() removes what str.isspace() calls whitespace (Unicode included), upper/lower/title/capitalize.
// Invalid UTF-8 bytes count as one code point each, so nothing here throws on odd input.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace specscope::jinja::text {

// Bounds on what one string operation may build, whatever the render's limits: templates are untrusted, and
// replace/indent/split/`*` could otherwise allocate far more than their inputs before anything is checked.
constexpr size_t kMaxStringBytes = size_t(64) << 20;
constexpr size_t kMaxItems = 1'000'000;  // list items one operation makes (split, a string's characters)

std::u32string decode(const std::string& s);
std::string encode(const std::u32string& s);
size_t length(const std::string& s);  // code points

bool py_isspace(char32_t cp);
// str.strip(chars) / lstrip / rstrip; chars == nullopt strips whitespace.
std::string strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right);
std::string upper(const std::string& s);  // ASCII, Latin-1, Greek and Cyrillic letters; others unchanged
std::string lower(const std::string& s);  // Unicode lowercase mapping (one code point to one)
std::string capitalize(const std::string& s);   // first code point upper, the rest lower
std::string py_title(const std::string& s);     // str.title(): a letter after a non-letter is upper-cased
std::string jinja_title(const std::string& s);  // the `title` filter: words split at blanks and -({[<
// str.split(sep, maxsplit): sep == nullopt splits at runs of whitespace and drops empty ends. Throws
// std::invalid_argument past kMaxItems parts.
std::vector<std::string> split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit);
// Throws std::invalid_argument when the result would exceed kMaxStringBytes.
std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count);
std::vector<std::string> splitlines(const std::string& s);

}  // namespace specscope::jinja::text
