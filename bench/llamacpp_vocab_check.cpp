// SpecScope's GGUF tokenizer on real vocabularies: llama.cpp ships vocab-only GGUF files of published models
// (models/ggml-vocab-<name>.gguf in its source, which the pinned llama-cpp-python sdist vendors) with test texts
// (.inp, cases separated by "\n__ggml_vocab_test__\n") and the ids the model's own Hugging Face tokenizer gives them
// (.out, one line of space-separated ids per case, no BOS; llama.cpp's convert_hf_to_gguf_update.py writes them).
// Prints, per file, how many cases SpecScope's ids differ on, and each such case; exits 1 if any does, 2 if a file
// cannot be read as a tokenizer (a family SpecScope does not run, named in one line).
//
//   llamacpp_vocab_check VOCAB.gguf...        (bench/llamacpp_vocabs.sh runs it on the families SpecScope runs)
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/formats/gguf.h"
#include "engine/tokenizer/gguf_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"

using namespace specscope;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path, "cannot open");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The cases of a .inp file, in order.
std::vector<std::string> test_texts(const std::string& path) {
  const std::string all = slurp(path), sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  for (size_t p = 0, q; (q = all.find(sep, p)) != std::string::npos; p = q + sep.size()) out.push_back(all.substr(p, q - p));
  return out;
}

// Cases whose ids differ from the .out file's (-1: the .out file has fewer lines than the .inp file has cases).
int check(const std::string& vocab) {
  const auto tok = tokenizer_from_gguf(GgufFile::open(vocab));
  const auto texts = test_texts(vocab + ".inp");
  std::istringstream expected(slurp(vocab + ".out"));
  int differ = 0;
  for (const auto& text : texts) {
    std::string line;
    if (!std::getline(expected, line)) return -1;
    std::vector<int32_t> want;
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) want.push_back(id);
    if (tok->encode(text, false) == want) continue;
    ++differ;
    std::printf("  differs: \"%s\"\n", text.substr(0, 60).c_str());
  }
  std::printf("%s: %zu cases, %d differ from the Hugging Face tokenizer's ids\n", vocab.c_str(), texts.size(), differ);
  return differ;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: llamacpp_vocab_check VOCAB.gguf...\n");
    return 2;
  }
  int failed = 0;
  for (int i = 1; i < argc; ++i) {
    try {
      const int d = check(argv[i]);
      if (d < 0) {
        std::fprintf(stderr, "error: %s.out: fewer lines than the .inp file has cases\n", argv[i]);
        return 2;
      }
      failed += d > 0;
    } catch (const InputError& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    }
  }
  return failed ? 1 : 0;
}
