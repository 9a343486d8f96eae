#include "engine/tokenizer/pretokenizer.h"

#include <optional>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/json_util.h"
#include "engine/tokenizer/split.h"
#include "engine/tokenizer/unicode.h"

namespace specscope::tok {

// A named namespace, not an anonymous one: the normalizers, pre-tokenizers, decoders and post-processors share
// kind names (Sequence, ByteLevel, Strip...), and a unity build (cmake/SpecScopeUnity.cmake) compiles them together.
namespace pre_tokenizers {

// GPT-2's pattern, which the ByteLevel pre-tokenizer applies when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Replaces each piece by its sub-pieces at `ranges`; only the sub-piece at offset 0 keeps at_origin.
void emit_ranges(const PreToken& p, const std::vector<Range>& ranges, std::vector<PreToken>& out) {
  for (const auto& r : ranges) out.push_back({p.text.substr(r.first, r.second - r.first), p.at_origin && r.first == 0});
}

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) re_.emplace(kGpt2Pattern);
  }
  void apply(std::vector<PreToken>& pieces) const override {
    std::vector<PreToken> out;
    out.reserve(pieces.size() * 2);
    for (auto& p : pieces) {
      if (add_prefix_space_ && (p.text.empty() || p.text[0] != ' ')) p.text.insert(p.text.begin(), ' ');
      if (re_) {
        emit_ranges(p, split_ranges(p.text.size(), re_->find_all(p.text), SplitBehavior::Isolated, false), out);
      } else if (!p.text.empty()) {
        out.push_back(std::move(p));
      }
    }
    for (auto& p : out) p.text = bytes_to_chars(p.text);
    pieces = std::move(out);
  }
  bool byte_level() const override { return true; }

 private:
  bool add_prefix_space_;
  std::optional<Regex> re_;
};

class Split final : public PreTokenizer {
 public:
  Split(std::string literal, std::optional<Regex> re, SplitBehavior b, bool invert)
      : literal_(std::move(literal)), re_(std::move(re)), behavior_(b), invert_(invert) {}
  void apply(std::vector<PreToken>& pieces) const override {
    std::vector<PreToken> out;
    out.reserve(pieces.size() * 4);
    for (const auto& p : pieces) {
      const auto matches = re_ ? re_->find_all(p.text) : find_literal(p.text, literal_);
      emit_ranges(p, split_ranges(p.text.size(), matches, behavior_, invert_), out);
    }
    pieces = std::move(out);
  }

 private:
  std::string literal_;
  std::optional<Regex> re_;
  SplitBehavior behavior_;
  bool invert_;
};

class Metaspace final : public PreTokenizer {
 public:
  enum class Prepend { Always, First, Never };
  Metaspace(std::string replacement, Prepend scheme, bool split)
      : rep_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void apply(std::vector<PreToken>& pieces) const override {
    std::vector<PreToken> out;
    for (auto& p : pieces) {
      std::string s;
      s.reserve(p.text.size() + rep_.size());
      for (char c : p.text) {
        if (c == ' ') {
          s += rep_;
        } else {
          s.push_back(c);
        }
      }
      const bool starts = s.compare(0, rep_.size(), rep_) == 0;
      if (!starts && (scheme_ == Prepend::Always || (scheme_ == Prepend::First && p.at_origin))) s = rep_ + s;
      PreToken q{std::move(s), p.at_origin};
      if (split_) {
        // Split on every replacement character, each one opening the piece after it.
        emit_ranges(q, split_ranges(q.text.size(), find_literal(q.text, rep_), SplitBehavior::MergedWithNext, false),
                    out);
      } else if (!q.text.empty()) {
        out.push_back(std::move(q));
      }
    }
    pieces = std::move(out);
  }

 private:
  std::string rep_;
  Prepend scheme_;
  bool split_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void apply(std::vector<PreToken>& pieces) const override {
    for (const auto& p : parts_) p->apply(pieces);
  }
  bool byte_level() const override {
    for (const auto& p : parts_)
      if (p->byte_level()) return true;
    return false;
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

Metaspace::Prepend metaspace_scheme(const nlohmann::json& j, const std::string& path) {
  // Older files only have add_prefix_space; newer ones prepend_scheme (default "always"). As in the crate,
  // add_prefix_space=false forces "never" and conflicts with any other explicit scheme.
  Metaspace::Prepend scheme = Metaspace::Prepend::Always;
  if (j.contains("prepend_scheme") && j.at("prepend_scheme").is_string()) {
    const auto s = j.at("prepend_scheme").get<std::string>();
    if (s == "always") {
      scheme = Metaspace::Prepend::Always;
    } else if (s == "first") {
      scheme = Metaspace::Prepend::First;
    } else if (s == "never") {
      scheme = Metaspace::Prepend::Never;
    } else {
      throw InputError(path, "Metaspace prepend_scheme \"" + s + "\" is not always/first/never");
    }
  }
  if (j.contains("add_prefix_space") && j.at("add_prefix_space").is_boolean() && !j.at("add_prefix_space").get<bool>()) {
    if (scheme != Metaspace::Prepend::Never && j.contains("prepend_scheme"))
      throw InputError(path, "Metaspace add_prefix_space does not match declared prepend_scheme");
    scheme = Metaspace::Prepend::Never;
  }
  return scheme;
}

}  // namespace pre_tokenizers

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j, const std::string& path) {
  using namespace pre_tokenizers;
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, path, "pre_tokenizer");
  if (type == "ByteLevel") return std::make_unique<ByteLevel>(bool_or(j, "add_prefix_space", true), bool_or(j, "use_regex", true));
  if (type == "Split") {
    const auto pat = pattern_field(j, path, "Split pre-tokenizer");
    std::optional<Regex> re;
    if (pat.is_regex) re.emplace(compile_regex(pat.text, path, "pre-tokenizer"));
    return std::make_unique<Split>(pat.text, std::move(re),
                                   parse_behavior(str_field(j, "behavior", path, "Split pre-tokenizer"), path),
                                   bool_or(j, "invert", false));
  }
  // Digits and Punctuation split on one character class, as `tokenizers` does with a per-character predicate (Rust's
  // char::is_numeric: \p{N}; is_punctuation or ASCII punctuation: \p{P} and the ASCII symbols): each such character
  // is one match, so Isolated makes each its own piece and Contiguous joins runs of them. SmolLM2's and the DeepSeek
  // families' tokenizer.json files put Digits before the byte-level step; Falcon's puts Punctuation there too.
  if (type == "Digits") {
    const bool individual = bool_or(j, "individual_digits", false);
    return std::make_unique<Split>("\\p{N}", compile_regex("\\p{N}", path, "Digits pre-tokenizer"),
                                   individual ? SplitBehavior::Isolated : SplitBehavior::Contiguous, false);
  }
  if (type == "Punctuation") {
    const std::string punct = "[\\p{P}!-/:-@\\[-`{-~]";
    const SplitBehavior b = j.contains("behavior")
                                ? parse_behavior(str_field(j, "behavior", path, "Punctuation pre-tokenizer"), path)
                                : SplitBehavior::Isolated;
    return std::make_unique<Split>(punct, compile_regex(punct, path, "Punctuation pre-tokenizer"), b, false);
  }
  if (type == "Metaspace") {
    const std::string rep = str_field(j, "replacement", path, "Metaspace pre-tokenizer");
    if (rep.empty() || unicode::to_u32(rep).size() != 1)
      throw InputError(path, "Metaspace replacement must be one character");
    return std::make_unique<Metaspace>(rep, metaspace_scheme(j, path), bool_or(j, "split", true));
  }
  if (type == "Sequence") {
    const auto& list = field(j, "pretokenizers", path, "Sequence pre-tokenizer");
    if (!list.is_array()) throw InputError(path, "Sequence pre-tokenizer \"pretokenizers\" is not a list");
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (const auto& p : list)
      if (auto q = make_pre_tokenizer(p, path)) parts.push_back(std::move(q));
    return std::make_unique<Sequence>(std::move(parts));
  }
  throw InputError(path, "unsupported pre_tokenizer type \"" + type + "\"");
}

}  // namespace specscope::tok
