#include "engine/tokenizer/decoder.h"

#include <optional>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/json_util.h"
#include "engine/tokenizer/split.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode.h"

namespace specscope::tok {

// A named namespace, not an anonymous one: the normalizers, pre-tokenizers, decoders and post-processors share
// kind names (Sequence, ByteLevel, Strip...), and a unity build (cmake/SpecScopeUnity.cmake) compiles them together.
namespace decoders {

// Maps each token's characters back to bytes (tokens with an unmapped character, e.g. added tokens, keep
// their own UTF-8), concatenates everything and decodes it lossily into one string.
class ByteLevel final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) {
      if (auto b = chars_to_bytes(t)) {
        bytes += *b;
      } else {
        bytes += t;
      }
    }
    tokens.assign(1, unicode::utf8_lossy(bytes));
  }
  bool byte_level() const override { return true; }
};

// Turns runs of <0xNN> tokens into text; a run that is not valid UTF-8 becomes one U+FFFD per byte.
class ByteFallback final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string run;
    size_t run_len = 0;
    auto flush = [&] {
      if (run_len == 0) return;
      if (find_invalid_utf8(run) == std::string::npos) {
        out.push_back(run);
      } else {
        for (size_t k = 0; k < run_len; ++k) out.emplace_back("\xEF\xBF\xBD");
      }
      run.clear();
      run_len = 0;
    };
    for (auto& t : tokens) {
      int byte = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') byte = parse_hex2(t[3], t[4]);
      if (byte >= 0) {
        run.push_back(static_cast<char>(byte));
        ++run_len;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
  bool byte_fallback() const override { return true; }

 private:
  static int parse_hex2(char a, char b) {
    auto d = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int hi = d(a), lo = d(b);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, all);
  }
};

// Removes up to `start` leading and `stop` trailing copies of one character from every token.
class Strip final : public Decoder {
 public:
  Strip(char32_t c, size_t start, size_t stop) : c_(c), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) {
      const auto cps = unicode::to_u32(t);
      size_t b = 0;
      while (b < start_ && b < cps.size() && cps[b] == c_) ++b;
      size_t e = cps.size();
      for (size_t k = 0; k < std::min(stop_, cps.size() - b) && cps[e - 1] == c_; ++k) --e;
      t = unicode::to_utf8(cps.substr(b, e - b));
    }
  }

 private:
  char32_t c_;
  size_t start_, stop_;
};

class Replace final : public Decoder {
 public:
  Replace(std::string literal, std::optional<Regex> re, std::string content)
      : literal_(std::move(literal)), re_(std::move(re)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) {
      const auto matches = re_ ? re_->find_all(t) : find_literal(t, literal_);
      if (matches.empty()) continue;
      std::string out;
      size_t prev = 0;
      for (const auto& m : matches) {
        out.append(t, prev, m.first - prev);
        out += content_;
        prev = m.second;
      }
      out.append(t, prev, std::string::npos);
      t = std::move(out);
    }
  }

 private:
  std::string literal_;
  std::optional<Regex> re_;
  std::string content_;
};

// Replacement characters become spaces, except that the first token loses them entirely when the encoder
// prepends one (prepend_scheme other than "never").
class Metaspace final : public Decoder {
 public:
  Metaspace(std::string rep, bool strip_first) : rep_(std::move(rep)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      const auto matches = find_literal(tokens[i], rep_);
      if (matches.empty()) continue;
      std::string out;
      size_t prev = 0;
      for (const auto& m : matches) {
        out.append(tokens[i], prev, m.first - prev);
        if (!(i == 0 && strip_first_)) out.push_back(' ');
        prev = m.second;
      }
      out.append(tokens[i], prev, std::string::npos);
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string rep_;
  bool strip_first_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }
  bool byte_level() const override {
    for (const auto& p : parts_)
      if (p->byte_level()) return true;
    return false;
  }
  bool byte_fallback() const override {
    for (const auto& p : parts_)
      if (p->byte_fallback()) return true;
    return false;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace decoders

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, const std::string& path) {
  using namespace decoders;
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, path, "decoder");
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip") {
    const auto content = unicode::to_u32(str_field(j, "content", path, "Strip decoder"));
    if (content.size() != 1) throw InputError(path, "Strip decoder content must be one character");
    auto num = [&](const char* key) -> size_t {
      const auto& v = field(j, key, path, "Strip decoder");
      if (!v.is_number_unsigned()) throw InputError(path, std::string("Strip decoder \"") + key + "\" is not a count");
      return v.get<size_t>();
    };
    return std::make_unique<Strip>(content[0], num("start"), num("stop"));
  }
  if (type == "Replace") {
    const auto pat = pattern_field(j, path, "Replace decoder");
    std::optional<Regex> re;
    if (pat.is_regex) re.emplace(compile_regex(pat.text, path, "Replace decoder"));
    return std::make_unique<Replace>(pat.text, std::move(re), str_field(j, "content", path, "Replace decoder"));
  }
  if (type == "Metaspace") {
    const std::string rep = str_field(j, "replacement", path, "Metaspace decoder");
    bool strip_first = true;  // prepend_scheme defaults to "always"
    if (j.contains("prepend_scheme") && j.at("prepend_scheme").is_string())
      strip_first = j.at("prepend_scheme").get<std::string>() != "never";
    if (j.contains("add_prefix_space") && j.at("add_prefix_space").is_boolean() && !j.at("add_prefix_space").get<bool>())
      strip_first = false;
    return std::make_unique<Metaspace>(rep, strip_first);
  }
  if (type == "Sequence") {
    const auto& list = field(j, "decoders", path, "Sequence decoder");
    if (!list.is_array()) throw InputError(path, "Sequence decoder \"decoders\" is not a list");
    std::vector<std::unique_ptr<Decoder>> parts;
    for (const auto& d : list)
      if (auto p = make_decoder(d, path)) parts.push_back(std::move(p));
    return std::make_unique<Sequence>(std::move(parts));
  }
  throw InputError(path, "unsupported decoder type \"" + type + "\"");
}

}  // namespace specscope::tok
