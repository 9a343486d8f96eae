#pragma once
// The Tokenizer built from a tokenizer.json: the `tokenizers` crate's pipeline (added-token split,
// normalizer, pre-tokenizer, BPE model, post-processor; decoder for the way back).
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "engine/tokenizer/added_vocab.h"
#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/decoder.h"
#include "engine/tokenizer/normalizer.h"
#include "engine/tokenizer/post_processor.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace specscope::tok {

class HfTokenizer final : public Tokenizer {
 public:
  // `path` is used in error messages only.
  HfTokenizer(const nlohmann::json& root, const std::string& path);

  std::vector<int32_t> encode(std::string_view text, bool add_special = true) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const override;
  std::string token_bytes(int32_t id) const override;
  std::string token_piece(int32_t id) const override;
  std::optional<int32_t> piece_to_id(std::string_view piece) const override;
  int vocab_size() const override;
  bool is_special(int32_t id) const override;
  std::string kind() const override;

  const PostProcessor* post_processor() const { return post_.get(); }
  bool byte_fallback_decoder() const { return decoder_ && decoder_->byte_fallback(); }

 private:
  const std::string* piece_of(int32_t id) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<PostProcessor> post_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocabulary added_;
  bool byte_level_ = false;
};

}  // namespace specscope::tok
