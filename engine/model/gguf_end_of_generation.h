#pragma once
// The tokens that end generation for a GGUF file, as llama.cpp decides them (llama-vocab.cpp, the copy vendored in
// the pinned llama-cpp-python): besides the file's eos/eot/eom ids, every token named like an end of turn in any
// family (<|im_end|>, <|eot_id|>, <|end|>, <end_of_turn>, <|endoftext|>, harmony's <|return|> and <|call|>, ...) and
// the fill-in-the-middle pad/repo/separator tokens; then harmony's <|end|> is taken back out where <|return|> and
// <|call|> are there (gpt-oss ends a message, not its turn, with <|end|>: stopping there would stop after the
// analysis), as is a normal </s> in the vocabularies that have one. A GGUF file has no generation_config.json:
// this is what a user who runs the same file in llama.cpp, Ollama or LM Studio sees stop their replies.
#include <vector>

namespace specscope {

class GgufFile;
class Tokenizer;

// The ids: `eos_ids` first (the file's eos/eot/eom, as config_from_gguf read and checked them into
// ModelConfig::eos_token_ids), then the rest in id order. Ids outside the vocabulary are left out.
std::vector<int> gguf_end_of_generation_ids(const GgufFile& g, const Tokenizer& tok, const std::vector<int>& eos_ids,
                                            int vocab_size);

}  // namespace specscope
