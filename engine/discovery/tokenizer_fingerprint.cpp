#include "engine/discovery/tokenizer_fingerprint.h"

#include <nlohmann/json.hpp>

#include "engine/tokenizer/shared_vocabulary.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"
#include "engine/util/sha256.h"

namespace specscope::discovery {

namespace {
constexpr size_t kMaxVocab = 4u << 20;  // far past any released tokenizer; ids beyond are a broken file
}

std::string tokens_fingerprint(const std::vector<std::string>& tokens) {
  // Padding (is_padding_piece) hashes as a hole, and the tail of it not at all: a family's sizes padded to
  // different vocabularies, and a GGUF file and its tokenizer.json, get one fingerprint.
  size_t n = tokens.size();
  while (n > 0 && is_padding_piece(tokens[n - 1], int32_t(n - 1))) --n;
  Sha256 h;
  h.update(std::to_string(n) + "\n");
  for (size_t i = 0; i < n; ++i) {
    const std::string_view t = is_padding_piece(tokens[i], int32_t(i)) ? std::string_view() : tokens[i];
    h.update(std::to_string(t.size()) + ":");  // lengths first: tokens may hold newlines
    h.update(t);
  }
  return h.hex_digest();
}

std::string tokenizer_json_fingerprint(const std::string& path) {
  try {
    const nlohmann::json j = nlohmann::json::parse(read_text_file(path));
    std::vector<std::string> tokens;
    auto put = [&](int64_t id, const std::string& text) {
      if (id < 0 || size_t(id) >= kMaxVocab) throw InputError(path, "token id out of range");
      if (size_t(id) >= tokens.size()) tokens.resize(size_t(id) + 1);
      tokens[size_t(id)] = text;
    };
    const auto& vocab = j.at("model").at("vocab");
    if (vocab.is_object()) {  // BPE, WordPiece, WordLevel: token -> id
      for (const auto& [text, id] : vocab.items()) put(id.get<int64_t>(), text);
    } else if (vocab.is_array()) {  // Unigram: [token, score] in id order
      for (size_t i = 0; i < vocab.size(); ++i) put(int64_t(i), vocab[i].at(0).get<std::string>());
    }
    if (j.contains("added_tokens") && j["added_tokens"].is_array())
      for (const auto& a : j["added_tokens"]) put(a.at("id").get<int64_t>(), a.at("content").get<std::string>());
    return tokens.empty() ? std::string() : tokens_fingerprint(tokens);
  } catch (const std::exception&) {
    return "";  // an unreadable tokenizer pairs with nothing; probing already reports the model's own problem
  }
}

const std::string& fingerprint_of(ModelFacts& f) {
  if (f.tokenizer_fingerprint.empty() && !f.tokenizer_file.empty()) {
    f.tokenizer_fingerprint = tokenizer_json_fingerprint(f.tokenizer_file);
    f.tokenizer_file.clear();  // asked once
  }
  return f.tokenizer_fingerprint;
}

}  // namespace specscope::discovery
