#pragma once
// Whether a drafter's token ids mean what the target's do. A drafter model only ever receives and proposes ids (the
// target's tokenizer encodes the prompt and decodes the answer), so what SpS needs is that every id both tokenizers
// have stands for the same token; how each would split text (merges, pre-tokenizer) never comes into it.
// Published families differ past the shared ids: Qwen2.5's GGUF files list 151,936 tokens for 0.5B-3B and 152,064
// for 7B-72B (llama.cpp's converter pads the token list to the model's padded vocabulary with [PAD<id>]), Gemma 3's
// larger checkpoints carry an image token the text-only 1B may not. Those tails are allowed here; the drafting code
// keeps each side's ids within what the other can embed.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/tokenizer/tokenizer.h"

namespace specscope {

// How far two vocabularies of one family may differ in size, past the ids they share: a draft pair's padded rows
// (Qwen2.5: 128), a tokenizer's special tokens past its model's rows (Gemma 3 1B: 1). llama.cpp's bound for a draft
// pair (SPEC_VOCAB_MAX_SIZE_DIFFERENCE); further apart, the two are taken for different vocabularies.
inline constexpr int kMaxVocabularyDifference = 128;

// Whether `piece` stands for no token at `id`: a hole in a tokenizer.json's ids (read as ""), or the "[PAD<id>]"
// that llama.cpp's converter writes for each id of the model's vocabulary past the tokenizer's. Two such pieces
// agree with each other whatever their spelling.
bool is_padding_piece(std::string_view piece, int32_t id);

// The first id below both vocabularies' sizes whose token differs, with both tokens in the message; nullopt when
// every shared id agrees.
struct TokenMismatch {
  int32_t id = 0;
  std::string first, second;  // the token pieces as stored (tokenizer.json / tokenizer.ggml.tokens)
  std::string describe() const;  // "id 17 is 'a' in one and 'b' in the other"
};
std::optional<TokenMismatch> first_token_mismatch(const Tokenizer& a, const Tokenizer& b);

}  // namespace specscope
