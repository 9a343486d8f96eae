#include "engine/tokenizer/unicode.h"

#include <algorithm>
#include <array>

#include "engine/tokenizer/tokenizer.h"

namespace specscope {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is invalid or cut short; *consumed is
// then the length of its maximal valid prefix (at least 1), which lossy decoding replaces by one U+FFFD.
size_t valid_seq_len(std::string_view s, size_t i, size_t* consumed) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  *consumed = 1;
  if (b0 < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte (excludes overlongs, surrogates)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 == 0xE0) {
    need = 3, lo = 0xA0;
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    need = 3;
  } else if (b0 == 0xED) {
    need = 3, hi = 0x9F;
  } else if (b0 == 0xF0) {
    need = 4, lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 4;
  } else if (b0 == 0xF4) {
    need = 4, hi = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= s.size()) return 0;
    const auto b = static_cast<unsigned char>(s[i + k]);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) return 0;
    *consumed = k + 1;
  }
  return need;
}

}  // namespace

size_t find_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t consumed;
    const size_t n = valid_seq_len(s, i, &consumed);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

namespace unicode {

namespace tables = unicode_tables;

size_t utf8_len(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC0 && lead < 0xE0) return 2;
  if (lead >= 0xE0 && lead < 0xF0) return 3;
  if (lead >= 0xF0 && lead < 0xF8) return 4;
  return 1;
}

char32_t next_cp(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  const size_t n = utf8_len(b0);
  char32_t cp = n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (size_t k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string to_utf8(const std::u32string& cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t c : cps) append_utf8(out, c);
  return out;
}

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) out.push_back(next_cp(s, i));
  return out;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    size_t consumed;
    const size_t n = valid_seq_len(s, i, &consumed);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD for the maximal invalid subpart
      i += consumed;
    }
  }
  return out;
}

Category category(char32_t cp) {
  if (cp > 0x10FFFF) return tables::Cn;
  // upper_bound on range starts; the range containing cp is the one before it.
  const auto* begin = tables::kCategoryStarts;
  const auto* end = begin + tables::kCategoryStartCount;
  const auto* it = std::upper_bound(begin, end, cp, [](char32_t c, const tables::CategoryStart& r) {
    return c < r.first;
  });
  return static_cast<Category>((it - 1)->cat);
}

bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  const auto c = category(cp);
  return c >= tables::Lu && c <= tables::Lo;
}

bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  const auto c = category(cp);
  return c >= tables::Nd && c <= tables::No;
}

static bool in_ranges(char32_t cp, const tables::CodeRange* r, size_t n) {
  for (size_t k = 0; k < n; ++k)
    if (cp >= r[k].first && cp <= r[k].last) return true;
  return false;
}

bool is_white_space(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return in_ranges(cp, tables::kWhiteSpace, tables::kWhiteSpaceCount);
}

bool is_rust_word(char32_t cp) {
  const auto c = category(cp);
  if ((c >= tables::Lu && c <= tables::Me) || c == tables::Nd || c == tables::Nl || c == tables::Pc) return true;
  if (cp == 0x200C || cp == 0x200D) return true;  // Join_Control
  return in_ranges(cp, tables::kOtherAlphabeticSymbols, tables::kOtherAlphabeticSymbolCount);
}

namespace {

struct CategoryName {
  const char* name;
  Category first, last;  // a major class is a contiguous run of the enum
};
constexpr std::array<CategoryName, 7> kMajor = {{{"L", tables::Lu, tables::Lo},
                                                 {"M", tables::Mn, tables::Me},
                                                 {"N", tables::Nd, tables::No},
                                                 {"P", tables::Pc, tables::Po},
                                                 {"S", tables::Sm, tables::So},
                                                 {"Z", tables::Zs, tables::Zp},
                                                 {"C", tables::Cc, tables::Co}}};
constexpr std::array<const char*, tables::kCategoryCount> kNames = {
    "Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
    "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};

}  // namespace

bool is_known_category(std::string_view name) {
  for (const auto& m : kMajor)
    if (name == m.name) return true;
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

bool in_category(char32_t cp, std::string_view name) {
  const auto c = category(cp);
  for (const auto& m : kMajor) {
    if (name == m.name) return (c >= m.first && c <= m.last) || (name == "C" && c == tables::Cn);
  }
  for (size_t k = 0; k < kNames.size(); ++k)
    if (name == kNames[k]) return c == k;
  return false;
}

// ---------------------------------------------------------------------------------------------- normalization
namespace {

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint8_t ccc(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* begin = tables::kCombiningClasses;
  const auto* end = begin + tables::kCombiningClassCount;
  const auto* it = std::lower_bound(begin, end, cp, [](const tables::CombiningClass& e, char32_t c) {
    return e.cp < c;
  });
  return (it != end && it->cp == cp) ? it->ccc : 0;
}

void decompose_into(char32_t cp, bool compat, std::u32string& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {  // Hangul syllables decompose algorithmically
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (cp >= 0xA0) {
    const auto* begin = tables::kDecompositions;
    const auto* end = begin + tables::kDecompositionCount;
    const auto* it = std::lower_bound(begin, end, cp, [](const tables::Decomposition& e, char32_t c) {
      return e.cp < c;
    });
    if (it != end && it->cp == cp) {
      const uint32_t off = compat ? it->compat_off : it->canon_off;
      const uint32_t len = compat ? it->compat_len : it->canon_len;
      if (len > 0) {
        out.append(tables::kDecompositionData + off, len);
        return;
      }
    }
  }
  out.push_back(cp);
}

// Canonical ordering: stable-sort each run of non-starters by combining class.
void canonical_order(std::u32string& s) {
  size_t i = 0;
  while (i < s.size()) {
    if (ccc(s[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && ccc(s[j]) != 0) ++j;
    if (j - i > 1)
      std::stable_sort(s.begin() + i, s.begin() + j, [](char32_t a, char32_t b) { return ccc(a) < ccc(b); });
    i = j;
  }
}

char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* begin = tables::kCompositions;
  const auto* end = begin + tables::kCompositionCount;
  const auto* it = std::lower_bound(begin, end, std::pair<char32_t, char32_t>{a, b},
                                    [](const tables::Composition& e, const std::pair<char32_t, char32_t>& k) {
                                      return e.first < k.first || (e.first == k.first && e.second < k.second);
                                    });
  return (it != end && it->first == a && it->second == b) ? it->composite : 0;
}

// The canonical composition algorithm (UAX #15): a character combines with the last starter unless a
// character in between is blocking it (same or higher combining class, or a starter).
void compose(std::u32string& s) {
  if (s.empty()) return;
  size_t starter = 0;
  // Class of the last character kept; 256 while no starter has been seen (nothing may compose then).
  int last_cc = ccc(s[0]) == 0 ? 0 : 256;
  size_t out = 1;
  for (size_t i = 1; i < s.size(); ++i) {
    const char32_t c = s[i];
    const int cc = ccc(c);
    if (last_cc < cc || last_cc == 0) {
      if (const char32_t comp = compose_pair(s[starter], c)) {
        s[starter] = comp;
        continue;
      }
    }
    if (cc == 0) starter = out;
    last_cc = cc;
    s[out++] = c;
  }
  s.resize(out);
}

}  // namespace

std::string normalize(std::string_view s, NormForm form) {
  // ASCII is invariant under every form.
  if (std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
    return std::string(s);
  const bool compat = form == NormForm::NFKC || form == NormForm::NFKD;
  std::u32string d;
  d.reserve(s.size());
  for (size_t i = 0; i < s.size();) decompose_into(next_cp(s, i), compat, d);
  canonical_order(d);
  if (form == NormForm::NFC || form == NormForm::NFKC) compose(d);
  return to_utf8(d);
}

std::u32string lowercase_cp(char32_t cp) {
  if (cp < 0x80) return std::u32string(1, (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp);
  const auto* begin = tables::kLowercase;
  const auto* end = begin + tables::kLowercaseCount;
  const auto* it = std::lower_bound(begin, end, cp, [](const tables::CaseMapping& e, char32_t c) {
    return e.cp < c;
  });
  if (it != end && it->cp == cp) return std::u32string(tables::kLowercaseData + it->off, it->len);
  return std::u32string(1, cp);
}

std::string lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char32_t cp = next_cp(s, i);
    if (cp < 0x80) {
      out.push_back(static_cast<char>((cp >= 'A' && cp <= 'Z') ? cp + 32 : cp));
    } else {
      for (char32_t c : lowercase_cp(cp)) append_utf8(out, c);
    }
  }
  return out;
}

}  // namespace unicode
}  // namespace specscope
