#pragma once
// Raw Unicode data tables, generated into unicode_tables.cpp by gen_unicode_tables.py (see its docstring for
// which Unicode versions and why). Use the lookups in unicode.h rather than these arrays directly.
#include <cstddef>
#include <cstdint>

namespace specscope::unicode_tables {

// General categories, in the order the generator writes them (index into this list).
enum Category : uint8_t {
  Cn, Lu, Ll, Lt, Lm, Lo, Mn, Mc, Me, Nd, Nl, No, Pc, Pd, Ps, Pe, Pi, Pf, Po, Sm, Sc, Sk, So, Zs, Zl, Zp,
  Cc, Cf, Cs, Co, kCategoryCount
};

struct CategoryStart {  // category `cat` runs from `first` up to the next entry's first - 1
  char32_t first;
  uint8_t cat;
};
struct CodeRange {
  char32_t first, last;
};
struct Decomposition {  // full decompositions as slices of kDecompositionData; len 0 = maps to itself
  char32_t cp;
  uint32_t canon_off, canon_len, compat_off, compat_len;
};
struct CombiningClass {
  char32_t cp;
  uint8_t ccc;
};
struct Composition {  // sorted by (first, second)
  char32_t first, second, composite;
};
struct CaseMapping {
  char32_t cp;
  uint32_t off, len;
};

extern const char* const kCategoryUnicodeVersion;
extern const CategoryStart kCategoryStarts[];
extern const size_t kCategoryStartCount;
extern const CodeRange kWhiteSpace[];
extern const size_t kWhiteSpaceCount;
extern const CodeRange kOtherAlphabeticSymbols[];
extern const size_t kOtherAlphabeticSymbolCount;
extern const Decomposition kDecompositions[];
extern const size_t kDecompositionCount;
extern const char32_t kDecompositionData[];
extern const CombiningClass kCombiningClasses[];
extern const size_t kCombiningClassCount;
extern const Composition kCompositions[];
extern const size_t kCompositionCount;
extern const CaseMapping kLowercase[];
extern const size_t kLowercaseCount;
extern const char32_t kLowercaseData[];

}  // namespace specscope::unicode_tables
