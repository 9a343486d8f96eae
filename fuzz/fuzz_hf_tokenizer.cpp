// libFuzzer target: a Hugging Face tokenizer.json (engine/tokenizer/tokenizer_json.cpp and the pipeline it builds:
// model, normalizers, pre-tokenizers with their regexes, added tokens, post-processor, decoder) on arbitrary bytes.
// A model folder anyone may publish carries one, so: InputError or a tokenizer, never a crash; a tokenizer that builds
// encodes and decodes a fixed text, every id it gives is inside its vocabulary, and every id's bytes can be asked for.
// The bytes go through a file because from_files is the one entry point the product uses.
// Seeds: fuzz/corpus/hf_tokenizer (the tokenizers of tests/fixtures/tokenizers cut to 300 ids by
// fuzz/make_hf_tokenizer_seeds.py, and regression seeds).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"

using namespace specscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/fuzz_hf_tokenizer." + std::to_string(getpid()) + ".json";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    std::abort();
  }
  try {
    const auto tok = Tokenizer::from_files(path);
    const int v = tok->vocab_size();
    for (bool special : {false, true}) {
      const auto ids = tok->encode("Hello wörld, it's 2024!\n  \xE4\xBD\xA0\xE5\xA5\xBD <s> x\xF0\x9F\x98\x80", special);
      for (int32_t id : ids)
        if (id < 0 || id >= v) std::abort();
      (void)tok->decode(ids, false);
      (void)tok->decode(ids, true);
    }
    for (int32_t id = 0; id < v && id < 64; ++id) (void)tok->token_bytes(id);
  } catch (const InputError&) {
  }
  return 0;
}
