#pragma once
// GPT-2's reversible byte <-> printable-character mapping used by ByteLevel pre-tokenizers and decoders:
// printable Latin-1 bytes map to themselves, the other 68 bytes to U+0100.. in order.
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace specscope::tok {

// UTF-8 of the character byte b maps to.
const std::string& byte_to_char_utf8(unsigned char b);
// The byte a mapped character stands for, if it is one of the 256.
std::optional<unsigned char> char_to_byte(char32_t c);
// Maps every byte of s to its character (the ByteLevel pre-tokenizer's transform).
std::string bytes_to_chars(std::string_view s);
// Inverse of bytes_to_chars for a token: the bytes when every character is mapped, else nullopt.
std::optional<std::string> chars_to_bytes(std::string_view token);

}  // namespace specscope::tok
