#include "engine/model/tokenizer_fit.h"

#include <spdlog/spdlog.h>

#include "engine/util/error.h"

namespace specscope {

void check_tokenizer_fits(const Tokenizer& tok, int vocab_size, const std::string& file, bool warn) {
  const int n = tok.vocab_size();
  if (n <= vocab_size) return;
  auto refuse = [&](const std::string& why) {
    throw InputError(file, "tokenizer has " + std::to_string(n) + " tokens but the model's vocabulary is " +
                               std::to_string(vocab_size) + why);
  };
  if (n - vocab_size > kMaxVocabularyDifference) refuse("");
  std::string names;
  for (int32_t id = vocab_size; id < n; ++id) {
    const std::string piece = tok.token_piece(id);
    if (piece.empty()) continue;  // a hole in the ids
    if (!tok.is_special(id)) refuse(" (token " + std::to_string(id) + ", '" + piece + "', is not a special token)");
    if (names.size() < 200) names += (names.empty() ? "" : ", ") + piece + " (" + std::to_string(id) + ")";
  }
  if (warn)
    spdlog::warn("{}: the tokenizer's special token(s) {} lie past the model's {} embedding rows: the model never "
                 "produces them, and a prompt that contains one is refused",
                 file, names, vocab_size);
}

void check_prompt_ids(const Tokenizer& tok, std::span<const int32_t> ids, int vocab_size) {
  for (int32_t id : ids)
    if (id >= vocab_size)
      throw InputError("prompt", "contains '" + tok.token_piece(id) + "' (token " + std::to_string(id) +
                                     "), which this model has no embedding for");
}

}  // namespace specscope
