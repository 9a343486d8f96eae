#pragma once
// Whether a tokenizer fits the model it came with, shared by the safetensors and GGUF loaders. A tokenizer may name
// a few special tokens past the model's embedding rows: Google's gemma-3-1b-it ships the family's one tokenizer,
// whose `<image_soft_token>` (id 262144, a placeholder the vision models replace with image features) lies past the
// text model's 262,144 rows; transformers loads it and llama.cpp's converter drops the token. The model can never
// produce such a token (it has no logit for it), and a prompt that spells one out is refused (check_prompt_ids).
// More than kMaxVocabularyDifference of them, or an ordinary token past the rows, means the tokenizer belongs to
// another model: an error.
#include <cstdint>
#include <span>
#include <string>

#include "engine/tokenizer/shared_vocabulary.h"
#include "engine/tokenizer/tokenizer.h"

namespace specscope {

// Throws InputError(file, ...) when `tok` does not fit a model of `vocab_size` rows; with `warn`, logs a warning
// naming them when it holds special tokens past the rows (the models listing asks without).
void check_tokenizer_fits(const Tokenizer& tok, int vocab_size, const std::string& file, bool warn = true);

// Throws InputError("prompt", ...) naming the first token of `ids` the model has no row for.
void check_prompt_ids(const Tokenizer& tok, std::span<const int32_t> ids, int vocab_size);

}  // namespace specscope
