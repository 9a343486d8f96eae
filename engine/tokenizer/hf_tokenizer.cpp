#include "engine/tokenizer/hf_tokenizer.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/json_util.h"
#include "engine/util/error.h"

namespace specscope::tok {

HfTokenizer::HfTokenizer(const nlohmann::json& root, const std::string& path) {
  if (!root.is_object()) throw InputError(path, "top level is not a JSON object");
  const auto& model = field(root, "model", path, "tokenizer.json");
  // Files from older converters omit the model type; BPE is recognised by its merges.
  std::string type = model.is_object() && model.contains("type") && model.at("type").is_string()
                         ? model.at("type").get<std::string>()
                         : (model.is_object() && model.contains("merges") ? "BPE" : "");
  if (type != "BPE") throw InputError(path, "unsupported model type \"" + type + "\" (only BPE is supported)");
  model_ = std::make_unique<BpeModel>(model, path);
  normalizer_ = make_normalizer(root.value("normalizer", nlohmann::json()), path);
  pre_ = make_pre_tokenizer(root.value("pre_tokenizer", nlohmann::json()), path);
  post_ = make_post_processor(root.value("post_processor", nlohmann::json()), path);
  decoder_ = make_decoder(root.value("decoder", nlohmann::json()), path);
  added_.load(root.value("added_tokens", nlohmann::json()), path, normalizer_.get());
  byte_level_ = (pre_ && pre_->byte_level()) || (decoder_ && decoder_->byte_level());
  // The post-processor's ids are written in the file beside the vocabulary, not looked up in it: one outside it would
  // reach the model's embedding table (found by fuzz/fuzz_hf_tokenizer.cpp).
  if (post_) {
    const int vocab = vocab_size();
    for (const auto& ids : {post_->prefix_ids(), post_->suffix_ids()})
      for (int32_t id : ids)
        if (id < 0 || id >= vocab)
          throw InputError(path, "post_processor adds token id " + std::to_string(id) +
                                     ", outside the vocabulary (ids 0-" + std::to_string(vocab - 1) + ")");
  }
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text, bool add_special) const {
  if (const size_t bad = find_invalid_utf8(text); bad != std::string_view::npos)
    throw InputError("prompt", "invalid UTF-8 at byte " + std::to_string(bad));
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<PreToken> words;
  for (auto& piece : added_.split(text, normalizer_.get())) {
    if (piece.id >= 0) {
      ids.push_back(piece.id);
      continue;
    }
    words.clear();
    words.push_back({std::move(piece.text), piece.at_origin});
    if (pre_) pre_->apply(words);
    for (const auto& w : words) model_->tokenize(w.text, ids);
  }
  if (add_special && post_) ids = post_->process(std::move(ids));
  return ids;
}

const std::string* HfTokenizer::piece_of(int32_t id) const {
  if (const auto* a = added_.by_id(id)) return &a->decoded;
  return model_->id_to_token(id);
}

std::string HfTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string* p = piece_of(id);
    if (!p) continue;  // unknown ids are dropped, as the crate does
    if (skip_special && added_.is_special_content(*p)) continue;
    tokens.push_back(*p);
  }
  std::string out;
  if (decoder_) {
    decoder_->decode_chain(tokens);
    for (const auto& t : tokens) out += t;
  } else {
    for (size_t k = 0; k < tokens.size(); ++k) {
      if (k) out.push_back(' ');
      out += tokens[k];
    }
  }
  return out;
}

std::string HfTokenizer::token_bytes(int32_t id) const {
  const std::string* p = piece_of(id);
  if (!p) return {};
  if (byte_level_) {
    if (auto b = chars_to_bytes(*p)) return *b;
    return *p;
  }
  if (!added_.by_id(id) && model_->byte_fallback() && p->size() == 6 && p->compare(0, 3, "<0x") == 0 && (*p)[5] == '>' &&
      std::isxdigit(static_cast<unsigned char>((*p)[3])) && std::isxdigit(static_cast<unsigned char>((*p)[4]))) {
    return std::string(1, static_cast<char>(std::stoi(p->substr(3, 2), nullptr, 16)));
  }
  std::string out;
  for (size_t i = 0; i < p->size();) {
    if (p->compare(i, 3, "\xE2\x96\x81") == 0) {  // U+2581, SentencePiece's space
      out.push_back(' ');
      i += 3;
    } else {
      out.push_back((*p)[i++]);
    }
  }
  return out;
}

std::string HfTokenizer::token_piece(int32_t id) const {
  if (const auto* a = added_.by_id(id)) return a->content;
  const std::string* p = model_->id_to_token(id);
  return p ? *p : std::string();
}

std::optional<int32_t> HfTokenizer::piece_to_id(std::string_view piece) const {
  if (auto id = added_.id_of(piece)) return id;
  return model_->token_to_id(piece);
}

int HfTokenizer::vocab_size() const { return std::max(model_->max_id(), added_.max_id()) + 1; }

bool HfTokenizer::is_special(int32_t id) const {
  const auto* a = added_.by_id(id);
  return a && a->special;
}

std::string HfTokenizer::kind() const { return byte_level_ ? "byte-level-bpe" : "sentencepiece-bpe"; }

}  // namespace specscope::tok
