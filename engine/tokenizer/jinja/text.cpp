#include "engine/tokenizer/jinja/text.h"

#include <algorithm>
#include <stdexcept>

#include "engine/tokenizer/unicode.h"

namespace specscope::jinja::text {

namespace {

// Invalid bytes are carried as lone surrogates U+DC80..U+DCFF (Python's surrogateescape) and written back as
// the same byte, so decode/encode round-trips any input.
constexpr char32_t kEscapeBase = 0xDC00;

bool is_letter(char32_t cp) { return cp < 0xDC80 || cp > 0xDCFF ? unicode::is_letter(cp) : false; }

char32_t upper_cp(char32_t cp) {
  if (cp >= 'a' && cp <= 'z') return cp - 32;
  if ((cp >= 0xE0 && cp <= 0xFE && cp != 0xF7)) return cp - 32;                  // Latin-1
  if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;                 // Greek
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;                                // Cyrillic
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  return cp;
}

char32_t lower_cp(char32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp < 0x80 || (cp >= 0xDC80 && cp <= 0xDCFF)) return cp;
  const std::u32string l = unicode::lowercase_cp(cp);
  return l.size() == 1 ? l[0] : cp;
}

}  // namespace

std::u32string decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2) ok = false;
      else cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out += kEscapeBase + c;
      ++i;
    } else {
      out += cp;
      i += len;
    }
  }
  return out;
}

std::string encode(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) {
    if (cp >= 0xDC80 && cp <= 0xDCFF) out += char(cp - kEscapeBase);
    else unicode::append_utf8(out, cp);
  }
  return out;
}

size_t length(const std::string& s) {
  bool ascii = std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  return ascii ? s.size() : decode(s).size();
}

bool py_isspace(char32_t cp) {
  if (cp >= 0x09 && cp <= 0x0D) return true;
  if (cp >= 0x1C && cp <= 0x20) return true;
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string u = decode(s);
  const std::u32string set = chars ? decode(*chars) : std::u32string();
  auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : py_isspace(c); };
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && strippable(u[b])) ++b;
  if (right)
    while (e > b && strippable(u[e - 1])) --e;
  return encode(u.substr(b, e - b));
}

std::string upper(const std::string& s) {
  std::u32string u = decode(s);
  for (auto& c : u) c = upper_cp(c);
  return encode(u);
}

std::string lower(const std::string& s) {
  std::u32string u = decode(s);
  for (auto& c : u) c = lower_cp(c);
  return encode(u);
}

std::string capitalize(const std::string& s) {
  std::u32string u = decode(s);
  for (size_t i = 0; i < u.size(); ++i) u[i] = i == 0 ? upper_cp(u[i]) : lower_cp(u[i]);
  return encode(u);
}

std::string py_title(const std::string& s) {
  std::u32string u = decode(s);
  bool prev_letter = false;
  for (auto& c : u) {
    const bool letter = is_letter(c);
    c = letter ? (prev_letter ? lower_cp(c) : upper_cp(c)) : c;
    prev_letter = letter;
  }
  return encode(u);
}

std::string jinja_title(const std::string& s) {
  // Jinja: re.split(r"([-\s({\[<]+)") and item[0].upper() + item[1:].lower() for every piece.
  std::u32string u = decode(s);
  auto sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c); };
  bool start = true;
  for (auto& c : u) {
    if (sep(c)) {
      start = true;
      continue;
    }
    c = start ? upper_cp(c) : lower_cp(c);
    start = false;
  }
  return encode(u);
}

namespace {
void check_parts(size_t n) {
  if (n > kMaxItems)
    throw std::invalid_argument("split() makes more than " + std::to_string(kMaxItems) + " parts (limit)");
}
}  // namespace

std::vector<std::string> split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t pos = 0;
    while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
      const size_t at = s.find(*sep, pos);
      if (at == std::string::npos) break;
      out.push_back(s.substr(pos, at - pos));
      check_parts(out.size());
      pos = at + sep->size();
    }
    out.push_back(s.substr(pos));
    return out;
  }
  const std::u32string u = decode(s);
  size_t i = 0;
  while (i < u.size()) {
    while (i < u.size() && py_isspace(u[i])) ++i;
    if (i >= u.size()) break;
    if (maxsplit >= 0 && int64_t(out.size()) >= maxsplit) {
      size_t e = u.size();
      while (e > i && py_isspace(u[e - 1])) --e;
      out.push_back(encode(u.substr(i, e - i)));
      break;
    }
    size_t j = i;
    while (j < u.size() && !py_isspace(u[j])) ++j;
    out.push_back(encode(u.substr(i, j - i)));
    check_parts(out.size());
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit) {
  if (maxsplit < 0 || !sep) return split(s, sep, maxsplit);  // whitespace rsplit with a limit is not used by templates
  std::vector<std::string> out;
  size_t end = s.size();
  while (int64_t(out.size()) < maxsplit) {
    if (end < sep->size()) break;
    const size_t at = s.rfind(*sep, end - sep->size());
    if (at == std::string::npos) break;
    out.push_back(s.substr(at + sep->size(), end - at - sep->size()));
    check_parts(out.size());
    end = at;
  }
  out.push_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  // The most the result can be: every possible match replaced.
  const size_t matches = from.empty() ? s.size() + 1 : s.size() / from.size();
  const size_t most = count < 0 ? matches : std::min(matches, size_t(count));
  const size_t room = kMaxStringBytes - std::min(s.size(), kMaxStringBytes);
  if (to.size() > from.size() && most > 0 && (to.size() - from.size()) > room / most)
    throw std::invalid_argument("replace() would make a string of more than " + std::to_string(kMaxStringBytes) +
                                " bytes (limit)");
  if (from.empty()) {  // Python inserts `to` around every code point
    const std::u32string u = decode(s);
    std::string out;
    int64_t n = 0;
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || n < count) {
        out += to;
        ++n;
      }
      if (i < u.size()) out += encode(u.substr(i, 1));
    }
    return out;
  }
  std::string out;
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const size_t at = s.find(from, pos);
    if (at == std::string::npos) break;
    out.append(s, pos, at - pos);
    out += to;
    pos = at + from.size();
    ++n;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

std::vector<std::string> splitlines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      out.push_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

}  // namespace specscope::jinja::text
