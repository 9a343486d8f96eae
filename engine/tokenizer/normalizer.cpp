#include "engine/tokenizer/normalizer.h"

#include <optional>
#include <vector>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/json_util.h"
#include "engine/tokenizer/split.h"
#include "engine/tokenizer/unicode.h"

namespace specscope::tok {

// A named namespace, not an anonymous one: the normalizers, pre-tokenizers, decoders and post-processors share
// kind names (Sequence, ByteLevel, Strip...), and a unity build (cmake/SpecScopeUnity.cmake) compiles them together.
namespace normalizers {

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(unicode::NormForm f) : form_(f) {}
  std::string normalize(std::string s) const override { return unicode::normalize(s, form_); }

 private:
  unicode::NormForm form_;
};

class Lowercase final : public Normalizer {
 public:
  std::string normalize(std::string s) const override { return unicode::lowercase(s); }
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string p) : prepend_(std::move(p)) {}
  // The crate prepends only to non-empty strings.
  std::string normalize(std::string s) const override { return s.empty() ? s : prepend_ + s; }

 private:
  std::string prepend_;
};

class Replace final : public Normalizer {
 public:
  Replace(std::string literal, std::optional<Regex> re, std::string content)
      : literal_(std::move(literal)), re_(std::move(re)), content_(std::move(content)) {}
  std::string normalize(std::string s) const override {
    const auto matches = re_ ? re_->find_all(s) : find_literal(s, literal_);
    if (matches.empty()) return s;
    std::string out;
    out.reserve(s.size());
    size_t prev = 0;
    for (const auto& m : matches) {
      out.append(s, prev, m.first - prev);
      out += content_;
      prev = m.second;
    }
    out.append(s, prev, std::string::npos);
    return out;
  }

 private:
  std::string literal_;
  std::optional<Regex> re_;
  std::string content_;
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string s) const override {
    size_t b = 0, e = s.size();
    if (left_) {
      while (b < e) {
        size_t i = b;
        if (!unicode::is_white_space(unicode::next_cp(s, i))) break;
        b = i;
      }
    }
    if (right_) {
      while (e > b) {
        size_t start = e - 1;
        while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
        size_t i = start;
        if (!unicode::is_white_space(unicode::next_cp(s, i))) break;
        e = start;
      }
    }
    return s.substr(b, e - b);
  }

 private:
  bool left_, right_;
};

class ByteLevelNorm final : public Normalizer {
 public:
  std::string normalize(std::string s) const override { return bytes_to_chars(s); }
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> n) : parts_(std::move(n)) {}
  std::string normalize(std::string s) const override {
    for (const auto& p : parts_) s = p->normalize(std::move(s));
    return s;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace normalizers

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, const std::string& path) {
  using namespace normalizers;
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, path, "normalizer");
  if (type == "NFC") return std::make_unique<UnicodeForm>(unicode::NormForm::NFC);
  if (type == "NFD") return std::make_unique<UnicodeForm>(unicode::NormForm::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(unicode::NormForm::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(unicode::NormForm::NFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelNorm>();
  if (type == "Prepend") return std::make_unique<Prepend>(str_field(j, "prepend", path, "Prepend normalizer"));
  if (type == "Strip") return std::make_unique<Strip>(bool_or(j, "strip_left", true), bool_or(j, "strip_right", true));
  if (type == "Replace") {
    const auto pat = pattern_field(j, path, "Replace normalizer");
    std::optional<Regex> re;
    if (pat.is_regex) re.emplace(compile_regex(pat.text, path, "Replace normalizer"));
    return std::make_unique<Replace>(pat.text, std::move(re), str_field(j, "content", path, "Replace normalizer"));
  }
  if (type == "Sequence") {
    const auto& list = field(j, "normalizers", path, "Sequence normalizer");
    if (!list.is_array()) throw InputError(path, "Sequence normalizer \"normalizers\" is not a list");
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (const auto& n : list)
      if (auto p = make_normalizer(n, path)) parts.push_back(std::move(p));
    return std::make_unique<Sequence>(std::move(parts));
  }
  throw InputError(path, "unsupported normalizer type \"" + type + "\"");
}

}  // namespace specscope::tok
