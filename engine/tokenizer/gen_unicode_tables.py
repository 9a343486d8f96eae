#!/usr/bin/env python3
"""Generates engine/tokenizer/unicode_tables.cpp: the Unicode data SpecScope's tokenizers need.

    python3 engine/tokenizer/gen_unicode_tables.py            # writes unicode_tables.cpp next to this file

Why two Unicode versions:
  * General categories (\\p{L}, \\p{N}, ... in pre-tokenizer regexes) must equal the Oniguruma that the
    `tokenizers` crate bundles, which is Unicode 16.0.0. Python's stdlib `unicodedata` is older (3.11 has
    14.0), so the script uses the `unicodedata2` backport pinned to 16.0.0 when it is importable:
        python3 -m venv /tmp/ucd && /tmp/ucd/bin/pip install unicodedata2==16.0.0
        /tmp/ucd/bin/python engine/tokenizer/gen_unicode_tables.py
    With --allow-stdlib it falls back to the stdlib `unicodedata` (characters assigned after its version
    then classify as unassigned).
  * Normalization (NFC/NFD/NFKC/NFKD) in `tokenizers` comes from the unicode-normalization-alignments crate,
    whose data is Unicode 11.0.0 (checked against tokenizers 0.23: U+1F16C, a 12.0 compatibility character,
    is left alone, and the 12.0 combining marks U+1E130.. are treated as starters). Decompositions and
    combining classes of characters added after 11.0 are therefore dropped (AFTER_11 below: every
    code point that has a decomposition or a non-zero combining class in 16.0 but had neither in 11.0).
  * Lowercase mappings come from this interpreter's str.lower() per code point (Rust's char::to_lowercase
    has the same per-character semantics, e.g. U+0130 -> "i\\u0307"), plus LOWERCASE_ADDITIONS: the case
    pairs of Unicode 16.0 and 17.0 (UnicodeData.txt simple lowercase mappings), which Rust's std in
    tokenizers 0.23 already has and Python 3.11 (Unicode 14.0) lacks.
"""
import argparse
import os
import sys

AFTER_11 = [
    (0x0897, 0x089F), (0x08CA, 0x08D2), (0x0C3C, 0x0C3C), (0x0EBA, 0x0EBA), (0x1715, 0x1715), (0x1ABF, 0x1ACE),
    (0x1DFA, 0x1DFA), (0x32FF, 0x32FF), (0xA7F2, 0xA7F4), (0xA82C, 0xA82C), (0xAB69, 0xAB69), (0x105C9, 0x105C9),
    (0x105E4, 0x105E4), (0x10781, 0x10785), (0x10787, 0x107B0), (0x107B2, 0x107BA), (0x10D69, 0x10D6D),
    (0x10EAB, 0x10EAC), (0x10EFD, 0x10EFF), (0x10F82, 0x10F85), (0x11070, 0x11070), (0x11383, 0x11383),
    (0x11385, 0x11385), (0x1138E, 0x1138E), (0x11391, 0x11391), (0x113C5, 0x113C5), (0x113C7, 0x113C8),
    (0x113CE, 0x113D0), (0x11938, 0x11938), (0x1193D, 0x1193E), (0x11943, 0x11943), (0x119E0, 0x119E0),
    (0x11F41, 0x11F42), (0x16121, 0x16128), (0x1612F, 0x1612F), (0x16D68, 0x16D6A), (0x16FF0, 0x16FF1),
    (0x1CCD6, 0x1CCF9), (0x1E030, 0x1E06D), (0x1E08F, 0x1E08F), (0x1E130, 0x1E136), (0x1E2AE, 0x1E2AE),
    (0x1E2EC, 0x1E2EF), (0x1E4EC, 0x1E4EF), (0x1E5EE, 0x1E5EF), (0x1F16C, 0x1F16C), (0x1FBF0, 0x1FBF9),
]

# Unicode's White_Space property (PropList.txt); Oniguruma's \s and Rust's \s / char::is_whitespace use it.
# unicodedata does not expose it; it has not changed since Unicode 6.3.
WHITE_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
               (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)]

# Other_Alphabetic characters that are not marks (marks are word characters anyway): the circled and
# squared Latin letters. Needed for Rust regex's \w (Alphabetic + M + Nd + Pc + Join_Control), which
# the `tokenizers` crate uses for added tokens' single_word rule.
OTHER_ALPHABETIC_SYMBOLS = [(0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189)]

# (first, last, lowercase of first): consecutive capitals whose lowercase letters are consecutive too.
LOWERCASE_ADDITIONS = [(0x1C89, 0x1C89, 0x1C8A), (0xA7CB, 0xA7CB, 0x0264), (0xA7CC, 0xA7CC, 0xA7CD),
                       (0xA7CE, 0xA7CE, 0xA7CF), (0xA7D2, 0xA7D2, 0xA7D3), (0xA7D4, 0xA7D4, 0xA7D5),
                       (0xA7DA, 0xA7DA, 0xA7DB), (0xA7DC, 0xA7DC, 0x019B), (0x10D50, 0x10D65, 0x10D70),
                       (0x16EA0, 0x16EB8, 0x16EBB)]

CATEGORIES = ["Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi",
              "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"]
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3


def after_11(cp):
    return any(a <= cp <= b for a, b in AFTER_11)


def load_ucd(allow_stdlib):
    try:
        import unicodedata2 as ucd
        if ucd.unidata_version != "16.0.0":
            sys.exit("unicodedata2 %s found; need 16.0.0 (pip install unicodedata2==16.0.0)" % ucd.unidata_version)
        return ucd
    except ImportError:
        if not allow_stdlib:
            sys.exit("unicodedata2==16.0.0 is not installed (see the docstring), or pass --allow-stdlib")
        import unicodedata as ucd
        print("warning: using stdlib unicodedata %s for categories" % ucd.unidata_version, file=sys.stderr)
        return ucd


def category_ranges(ucd):
    starts = []
    prev = None
    for cp in range(0x110000):
        cat = ucd.category(chr(cp))
        if cat != prev:
            starts.append((cp, CATEGORIES.index(cat)))
            prev = cat
    return starts


def decomposition_tables(ucd):
    """Full (recursive) canonical and compatibility decompositions, Unicode 11.0 data; Hangul is algorithmic."""
    entries, data = [], []
    for cp in range(0x110000):
        if HANGUL_FIRST <= cp <= HANGUL_LAST or after_11(cp) or not ucd.decomposition(chr(cp)):
            continue
        c = chr(cp)
        nfd = ucd.normalize("NFD", c)
        nfkd = ucd.normalize("NFKD", c)
        # A decomposition only ever uses older characters, so none of these can be post-11.0 ones.
        assert not any(after_11(ord(x)) for x in nfkd), hex(cp)
        row = [cp]
        for s in (nfd, nfkd):
            if s == c:
                row += [0, 0]
            else:
                row += [len(data), len(s)]
                data += [ord(x) for x in s]
        entries.append(row)
    return entries, data


def combining_classes(ucd):
    return [(cp, ucd.combining(chr(cp))) for cp in range(0x110000)
            if ucd.combining(chr(cp)) and not after_11(cp)]


def compositions(ucd):
    """Primary composites: canonical pairs that NFC recomposes (excludes singletons, exclusions, non-starters)."""
    pairs = []
    for cp in range(0x110000):
        if HANGUL_FIRST <= cp <= HANGUL_LAST or after_11(cp):
            continue
        d = ucd.decomposition(chr(cp))
        if not d or d.startswith("<"):
            continue
        parts = [int(x, 16) for x in d.split()]
        if len(parts) != 2:
            continue
        if ucd.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(cp):
            pairs.append((parts[0], parts[1], cp))
    pairs.sort()
    return pairs


def lowercase_table():
    entries, data = [], []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        low = chr(cp).lower()
        for first, last, lower_first in LOWERCASE_ADDITIONS:
            if first <= cp <= last and low == chr(cp):
                low = chr(lower_first + cp - first)
        if low != chr(cp):
            entries.append((cp, len(data), len(low)))
            data += [ord(x) for x in low]
    return entries, data


def fmt_list(items, per_line):
    lines = []
    for i in range(0, len(items), per_line):
        lines.append("    " + " ".join(items[i:i + per_line]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--allow-stdlib", action="store_true")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "unicode_tables.cpp"))
    args = ap.parse_args()
    ucd = load_ucd(args.allow_stdlib)

    cats = category_ranges(ucd)
    dec, dec_data = decomposition_tables(ucd)
    ccc = combining_classes(ucd)
    comp = compositions(ucd)
    low, low_data = lowercase_table()

    out = []
    out.append("// GENERATED by engine/tokenizer/gen_unicode_tables.py -- do not edit by hand.")
    out.append("// General categories: Unicode %s. Normalization: Unicode 11.0 data (as the `tokenizers` crate)."
               % ucd.unidata_version)
    out.append("// Lowercase: Python %s str.lower() (Unicode %s)." % (sys.version.split()[0],
                                                                     __import__("unicodedata").unidata_version))
    out.append('#include "engine/tokenizer/unicode_tables.h"')
    out.append("")
    out.append("namespace specscope::unicode_tables {")
    out.append("")
    out.append('const char* const kCategoryUnicodeVersion = "%s";' % ucd.unidata_version)
    out.append("")
    out.append("const CategoryStart kCategoryStarts[] = {")
    out.append(fmt_list(["{0x%X, %d}," % (cp, c) for cp, c in cats], 8))
    out.append("};")
    out.append("const size_t kCategoryStartCount = sizeof(kCategoryStarts) / sizeof(kCategoryStarts[0]);")
    out.append("")
    out.append("const CodeRange kWhiteSpace[] = {")
    out.append(fmt_list(["{0x%X, 0x%X}," % r for r in WHITE_SPACE], 6))
    out.append("};")
    out.append("const size_t kWhiteSpaceCount = sizeof(kWhiteSpace) / sizeof(kWhiteSpace[0]);")
    out.append("")
    out.append("const CodeRange kOtherAlphabeticSymbols[] = {")
    out.append(fmt_list(["{0x%X, 0x%X}," % r for r in OTHER_ALPHABETIC_SYMBOLS], 6))
    out.append("};")
    out.append("const size_t kOtherAlphabeticSymbolCount = sizeof(kOtherAlphabeticSymbols) / "
               "sizeof(kOtherAlphabeticSymbols[0]);")
    out.append("")
    out.append("const Decomposition kDecompositions[] = {")
    out.append(fmt_list(["{0x%X, %d, %d, %d, %d}," % tuple(r) for r in dec], 5))
    out.append("};")
    out.append("const size_t kDecompositionCount = sizeof(kDecompositions) / sizeof(kDecompositions[0]);")
    out.append("const char32_t kDecompositionData[] = {")
    out.append(fmt_list(["0x%X," % x for x in dec_data], 12))
    out.append("};")
    out.append("")
    out.append("const CombiningClass kCombiningClasses[] = {")
    out.append(fmt_list(["{0x%X, %d}," % r for r in ccc], 8))
    out.append("};")
    out.append("const size_t kCombiningClassCount = sizeof(kCombiningClasses) / sizeof(kCombiningClasses[0]);")
    out.append("")
    out.append("const Composition kCompositions[] = {")
    out.append(fmt_list(["{0x%X, 0x%X, 0x%X}," % r for r in comp], 5))
    out.append("};")
    out.append("const size_t kCompositionCount = sizeof(kCompositions) / sizeof(kCompositions[0]);")
    out.append("")
    out.append("const CaseMapping kLowercase[] = {")
    out.append(fmt_list(["{0x%X, %d, %d}," % r for r in low], 6))
    out.append("};")
    out.append("const size_t kLowercaseCount = sizeof(kLowercase) / sizeof(kLowercase[0]);")
    out.append("const char32_t kLowercaseData[] = {")
    out.append(fmt_list(["0x%X," % x for x in low_data], 12))
    out.append("};")
    out.append("")
    out.append("}  // namespace specscope::unicode_tables")
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(out) + "\n")
    print("wrote %s: %d category ranges, %d decompositions, %d combining classes, %d compositions, %d lowercase"
          % (args.out, len(cats), len(dec), len(ccc), len(comp), len(low)), file=sys.stderr)


if __name__ == "__main__":
    main()
