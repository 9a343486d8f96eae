#pragma once
// A small backtracking regex engine for the pre-tokenizer patterns that Hugging Face tokenizer.json files use
// (GPT-2, Llama-3, Qwen2, GPT-4o-style, DeepSeek-style). std::regex knows no Unicode categories, and the
// `tokenizers` crate runs these patterns through Oniguruma, so this engine follows Oniguruma's semantics:
// leftmost match, alternatives tried in order, greedy/lazy quantifiers with backtracking, \s = White_Space,
// \p{..} = general categories of Unicode 16.0.
//
// Supported: literals and escapes (\t \n \r \f \v \e \xHH \x{H..} \uHHHH, escaped punctuation), '.',
// classes [...] with ranges, negation and \p{X} \P{X} \s \S \d \D inside, groups (...) (?:...),
// inline flags (?i) (?i:...), lookahead (?=...) (?!...), atomic groups (?>...), quantifiers * + ? {n} {n,} {n,m}
// {,m} with lazy (?) and possessive (+) forms, and the anchors ^ $ \A \z. As in Oniguruma's own syntax (not
// Perl's): a '+' after an interval is a quantifier of its own (x{1,3}+ is (x{1,3})+), and so is a '?' after an
// exact {n} (x{2}? is (x{2})?); (?i) equates characters with the same simple case folding, and folds a class before
// its '^' negates it; a loop whose body can match empty leaves after an empty iteration. Anything else (lookbehind,
// backreferences, \w \b, POSIX brackets, ...) is rejected with std::invalid_argument naming the construct.
// tests/fixtures/make_regex_semantics.py holds Oniguruma's answers for 4,000 random patterns of these constructs.
//
// Patterns are untrusted (tokenizer.json comes with models anyone may publish), so both halves are bounded
// (regex.cpp has the figures): a pattern nested too deeply or compiling to too large a program is refused with
// std::invalid_argument, and a search that runs past its allowance of steps (like Oniguruma's retry limit) throws
// InputError("prompt", ...) instead of running for hours.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace specscope {

class Regex {
 public:
  explicit Regex(std::string_view pattern);  // throws std::invalid_argument on unsupported syntax
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Every non-overlapping match in `text` (valid UTF-8), as byte ranges, in the order Oniguruma's
  // search loop (as driven by the `tokenizers` crate) finds them. Throws InputError past its allowance of steps.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
  const std::string& pattern() const { return pattern_; }

  struct Program;

 private:
  std::string pattern_;
  std::unique_ptr<Program> prog_;
};

}  // namespace specscope
