#pragma once
// A Tokenizer from a GGUF file's tokenizer.ggml.* metadata. Rather than a second tokenizer implementation, the
// metadata is translated into the tokenizer.json the Hugging Face converter would have written, and the existing
// (tested against the `tokenizers` crate) pipeline is built from it:
//   gpt2  -> byte-level BPE: vocab = tokens, merges = tokenizer.ggml.merges, the split regex chosen by
//            tokenizer.ggml.pre (llama-bpe / llama3, qwen2, gpt2 / default; others refused), ByteLevel decoder.
//   llama -> SentencePiece-style BPE with byte fallback: "▁" prefix + space replacement normalizer, merges rebuilt
//            from the scores (every split of a token into two vocabulary tokens, ordered by the token's score,
//            as transformers' SentencePiece extractor does), ByteFallback decoder.
// Every token tokenizer.ggml.token_type marks CONTROL (3) or UNKNOWN (2: <unk> in Llama files) becomes a special
// added token, every USER_DEFINED (4) one a non-special added token, all matched in the raw prompt text the way
// llama.cpp's tokenizer matches them with parse_special (`a <unk> b` -> BOS, ▁a, ▁, <unk>, ▁, ▁b); token names alone
// decide nothing (llama.cpp also retypes a few end-of-turn names such as <|im_end|> as control; we follow the file's
// types). BOS is prepended when tokenizer.ggml.add_bos_token says so (default: true for llama, false for gpt2, as
// llama.cpp).
// GGUF does not store the added tokens' lstrip/rstrip/normalized flags, so text that touches a user-defined token
// can tokenize differently from the original tokenizer.json (the test counts such lines).
#include <memory>
#include <string>

namespace specscope {

class GgufFile;
class Tokenizer;
class ChatTemplate;

// Throws InputError naming the file for a missing or inconsistent tokenizer.ggml.* key or an unsupported model.
std::shared_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& g);
// The tokenizer.json text tokenizer_from_gguf builds (for tests and debugging).
std::string gguf_tokenizer_json(const GgufFile& g);
// tokenizer.chat_template (Plain when absent), with the tokenizer's BOS/EOS strings.
std::shared_ptr<ChatTemplate> chat_template_from_gguf(const GgufFile& g, const Tokenizer& tok);

}  // namespace specscope
