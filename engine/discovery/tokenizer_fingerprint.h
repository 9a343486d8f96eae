#pragma once
// A tokenizer's identity for pairing a target with a drafter model (SpS needs the two to share token ids): the
// SHA-256 of the token strings in id order. GGUF's tokenizer.ggml.tokens and tokenizer.json's vocab (plus its
// added_tokens) spell tokens the same way (byte-level 'Ġ', SentencePiece '▁', '<0x0A>'), so a GGUF conversion and
// its Hugging Face source get the same fingerprint. Ids past the tokenizer that a model's padded vocabulary adds
// ("[PAD<id>]" in GGUF token lists) are left out, so Qwen2.5 0.5B's file (151,936 tokens) and 7B's (152,064)
// match. Merges are not hashed: two tokenizers with one vocabulary and different merges would pass (no published
// pair is known to differ only there).
#include <string>
#include <vector>

#include "engine/discovery/model_probe.h"

namespace specscope::discovery {

std::string tokens_fingerprint(const std::vector<std::string>& tokens);
// The fingerprint of a tokenizer.json; empty when it cannot be read (then nothing pairs on it).
std::string tokenizer_json_fingerprint(const std::string& path);
// f.tokenizer_fingerprint, computed from f.tokenizer_file the first time it is asked for (tokenizer.json files
// run to megabytes: only models whose vocabulary sizes are already close are ever asked).
const std::string& fingerprint_of(ModelFacts& f);

}  // namespace specscope::discovery
