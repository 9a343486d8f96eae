#include "engine/tokenizer/byte_level.h"

#include <cstdint>

#include "engine/tokenizer/unicode.h"

namespace specscope::tok {

namespace {

struct ByteMap {
  std::array<char32_t, 256> to_char{};
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 256 + 68> from_char{};  // character -> byte, -1 where none
  ByteMap() {
    from_char.fill(-1);
    auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      to_char[b] = printable(b) ? static_cast<char32_t>(b) : next++;
      unicode::append_utf8(to_utf8[b], to_char[b]);
      from_char[to_char[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

}  // namespace

const std::string& byte_to_char_utf8(unsigned char b) { return byte_map().to_utf8[b]; }

std::optional<unsigned char> char_to_byte(char32_t c) {
  const auto& m = byte_map().from_char;
  if (c >= m.size() || m[c] < 0) return std::nullopt;
  return static_cast<unsigned char>(m[c]);
}

std::string bytes_to_chars(std::string_view s) {
  std::string out;
  out.reserve(s.size() * 2);
  const auto& m = byte_map().to_utf8;
  for (unsigned char b : s) out += m[b];
  return out;
}

std::optional<std::string> chars_to_bytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    const auto b = char_to_byte(unicode::next_cp(token, i));
    if (!b) return std::nullopt;
    out.push_back(static_cast<char>(*b));
  }
  return out;
}

}  // namespace specscope::tok
