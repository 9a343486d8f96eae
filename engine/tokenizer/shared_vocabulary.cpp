#include "engine/tokenizer/shared_vocabulary.h"

#include <algorithm>

namespace specscope {

bool is_padding_piece(std::string_view piece, int32_t id) {
  // Called for every token of a vocabulary (the models listing's fingerprints): the common case, a token not
  // shaped "[PAD...]", is answered without building the string.
  if (piece.empty()) return true;
  if (!piece.starts_with("[PAD") || !piece.ends_with(']')) return false;
  return piece.substr(4, piece.size() - 5) == std::to_string(id);
}

std::string TokenMismatch::describe() const {
  return "id " + std::to_string(id) + " is '" + first + "' in one and '" + second + "' in the other";
}

std::optional<TokenMismatch> first_token_mismatch(const Tokenizer& a, const Tokenizer& b) {
  const int shared = std::min(a.vocab_size(), b.vocab_size());
  for (int32_t id = 0; id < shared; ++id) {
    std::string pa = a.token_piece(id), pb = b.token_piece(id);
    if (pa != pb && !(is_padding_piece(pa, id) && is_padding_piece(pb, id)))
      return TokenMismatch{id, std::move(pa), std::move(pb)};
  }
  return std::nullopt;
}

}  // namespace specscope
