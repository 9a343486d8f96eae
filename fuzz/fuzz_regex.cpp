// libFuzzer target: the pre-tokenizer regex engine (engine/tokenizer/regex.h) on arbitrary patterns and texts. A
// pattern comes from a tokenizer.json anyone may publish, so beyond "std::invalid_argument or a program, never a
// crash": compiling and matching stay within their budgets (a pattern that would not must be refused, not run for
// minutes or take gigabytes), and the matches find_all returns are ordered, non-overlapping, inside the text and on
// code point boundaries.
// Input: the pattern, a NUL byte, then the text (valid UTF-8; other texts are skipped). Without a NUL the whole input
// is the pattern, matched against a fixed text.
// Seeds: fuzz/corpus/regex (the published patterns of tests/fixtures/tokenizers/regex_patterns.json with texts).
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/tokenizer/regex.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"

using namespace specscope;

namespace {
bool on_boundary(std::string_view s, size_t i) {
  return i == 0 || i == s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view pattern = in.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos
                                    ? std::string_view("Hello wörld, it's 2024!\n  \xE4\xBD\xA0\xE5\xA5\xBD 123abc  x")
                                    : in.substr(nul + 1);
  if (find_invalid_utf8(text) != std::string_view::npos) return 0;
  try {
    const Regex re(pattern);
    const auto matches = re.find_all(text);
    size_t last = 0;
    for (const auto& [b, e] : matches) {
      if (b < last || e < b || e > text.size()) std::abort();
      if (!on_boundary(text, b) || !on_boundary(text, e)) std::abort();
      last = e;
    }
  } catch (const std::invalid_argument&) {  // a pattern refused
  } catch (const InputError&) {             // a search stopped at its allowance of steps
  }
  return 0;
}
