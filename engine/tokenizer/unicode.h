#pragma once
// UTF-8 and Unicode helpers for the tokenizers: decoding/encoding, validation, Rust-style lossy decoding,
// character classes (as Oniguruma and Rust see them), normalization forms and lowercasing.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/unicode_tables.h"

namespace specscope::unicode {

using unicode_tables::Category;

// Decodes the code point at s[i] (which must be valid UTF-8) and advances i past it.
char32_t next_cp(std::string_view s, size_t& i);
void append_utf8(std::string& out, char32_t cp);
std::string to_utf8(const std::u32string& cps);
std::u32string to_u32(std::string_view s);  // s must be valid UTF-8
size_t utf8_len(unsigned char lead);        // bytes in the sequence a lead byte starts (1 for invalid leads)

// Like Rust's String::from_utf8_lossy: each maximal invalid subsequence becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

Category category(char32_t cp);
bool is_letter(char32_t cp);             // \p{L}
bool is_number(char32_t cp);             // \p{N}
bool is_white_space(char32_t cp);        // White_Space: Oniguruma \s, Rust \s and char::is_whitespace
bool is_rust_word(char32_t cp);          // Rust regex \w: Alphabetic, M, Nd, Pc, Join_Control
// Whether the category named like "L", "Lu", "N", "Nd", "P", ... contains cp; false for unknown names.
bool in_category(char32_t cp, std::string_view name);
bool is_known_category(std::string_view name);

enum class NormForm { NFC, NFD, NFKC, NFKD };
std::string normalize(std::string_view s, NormForm form);
std::string lowercase(std::string_view s);  // per code point, like Rust's char::to_lowercase
std::u32string lowercase_cp(char32_t cp);

}  // namespace specscope::unicode
