// libFuzzer target: the model-level reading of GGUF metadata. On any input GgufFile::parse accepts,
// config_from_gguf and tokenizer_from_gguf (the tokenizer.json built from tokenizer.ggml.*, then the HF pipeline
// built from it) must return or throw InputError, and gguf_file_type_name (which never refuses a file) return; a
// tokenizer that builds must encode and decode a fixed text.
// Seed corpus: fuzz/corpus/gguf_model (metadata-only copies of the GGUF fixtures, as make_gguf_models.py's
// write_bad() makes them: llama with a SentencePiece tokenizer, qwen2 and qwen3 with byte-level ones, and the
// Tekken and DeepSeek LLM pre-tokenizers over the byte-level Llama 3 vocabulary; granite's scales; phi3's partial
// rotary, LongRoPE keys and SentencePiece chat tokens, which the Phi-3 rstrip patch reads; gpt-oss's experts, window
// and YaRN keys).
#include <cstdint>
#include <string>

#include "engine/formats/gguf.h"
#include "engine/formats/gguf_file_type.h"
#include "engine/model/gguf_config.h"
#include "engine/tokenizer/gguf_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"

using namespace specscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  GgufFile g;
  try {
    g = GgufFile::parse(data, size, "fuzz");
  } catch (const InputError&) {
    return 0;
  }
  (void)gguf_file_type_name(g);
  try {
    (void)config_from_gguf(g, true);
  } catch (const InputError&) {
  }
  try {
    auto tok = tokenizer_from_gguf(g);
    const auto ids = tok->encode("Hello wörld 123 <s>[INST] \xF0\x9F\x98\x80!", true);
    (void)tok->decode(ids);
    for (int32_t id = 0; id < tok->vocab_size() && id < 64; ++id) (void)tok->token_bytes(id);
  } catch (const InputError&) {
  }
  return 0;
}
