#include "engine/tokenizer/gguf_tokenizer.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "engine/formats/gguf.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/util/error.h"

namespace specscope {
using nlohmann::json;

namespace {

// llama.cpp's token types (llama_token_type / gguf.TokenType).
enum TokenType : int64_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// The pre-tokenizers of the Hugging Face tokenizers llama.cpp names in tokenizer.ggml.pre, as their tokenizer.json
// files define them: regex Splits (each "Isolated": matches and the text between become pieces, applied in order to
// the pieces of the one before), then the byte-level mapping, with GPT-2's own split built in or not. The names are
// llama.cpp's (llama-vocab.cpp), aliases included: a GGUF file names the family its converter recognized.
struct PreTokenizerFamily {
  std::vector<std::string> names;
  std::vector<std::string> splits;
  bool gpt2_split = false;     // ByteLevel's use_regex: GPT-2's split after the ones above
  bool nfc = false;            // an NFC normalizer before everything (Qwen2's tokenizer.json has one)
  bool ignore_merges = false;  // a word that is a whole token is taken whole (tokenizer.json's BPE ignore_merges)
  // Whether BOS is added when the file has no tokenizer.ggml.add_bos_token: llama.cpp's default for the family
  // (Llama 3's and Tekken's post-processors add it; converters before 2024-05 wrote no key for them).
  bool add_bos = false;
};

// Llama 3's split with its contractions spelled case by case (the same matches), as GLM-4's and DBRX's are written.
constexpr const char* kLlama3SplitSpelledOut =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const std::vector<PreTokenizerFamily>& pre_tokenizer_families() {
  static const std::vector<PreTokenizerFamily> families = {
      // Llama 3 (and Falcon 3, a Llama-architecture family on the same split).
      {.names = {"llama-bpe", "llama3", "llama-v3", "falcon3"},
       .splits = {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
        "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       .ignore_merges = true, .add_bos = true},
      // Qwen2, Qwen2.5 and Qwen3, and DeepSeek-R1's Qwen distillations (their own name, Qwen's tokenizer).
      {.names = {"qwen2", "deepseek-r1-qwen"},
       .splits = {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
        "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       .nfc = true},
      // GPT-2's split alone.
      {.names = {"gpt-2", "gpt2", "default"}, .splits = {}, .gpt2_split = true},
      // SmolLM and SmolLM2, and StarCoder's tokenizer, which IBM's Granite 3 models use (their files say "refact",
      // the name llama.cpp's converter gives that tokenizer): every digit its own piece, then GPT-2's split.
      {.names = {"smollm", "refact", "starcoder"}, .splits = {"\\p{N}"}, .gpt2_split = true},
      // DeepSeek Coder: line breaks, letters and punctuation each with one leading space, CJK runs, single digits.
      {.names = {"deepseek-coder"},
       .splits = {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", "\\p{N}"}},
      // DeepSeek LLM: as the coder's, with its letters and punctuation spelled as character ranges and whole numbers.
      {.names = {"deepseek-llm"},
       .splits = {"[\\r\\n]",
        "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
        "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
        "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
        "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
        "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe"
        "\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc"
        "\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134"
        "\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee"
        "\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf"
        "\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3"
        "\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df"
        "\U0001e900-\U0001e943]+",
        "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+", "\\s+$",
        "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", "\\p{N}+"}},
      // DeepSeek-V3 and R1: digits in runs of up to three, CJK runs, then letters (with one ASCII punctuation mark
      // before them, or any other non-letter), punctuation and symbol runs, line breaks and spaces.
      {.names = {"deepseek-v3"},
       .splits = {"\\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
        " ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
      // GLM-4 (GLM-4.5 to 4.7 and their Flash models, whose files are deepseek2): Llama 3's split with its
      // contractions spelled case by case (the same matches), whole words taken whole, and no BOS unless the file
      // names one and asks for it (llama.cpp clears the family's BOS id, and the file's keys then set it).
      {.names = {"glm4", "glm5"},
       .splits = {kLlama3SplitSpelledOut},
       .ignore_merges = true},
      // DBRX's cl100k tokenizer, which OLMo 2 and OLMo 3 use (their GGUF files say "dbrx"): Llama 3's split as GLM-4's
      // spells it, merges applied to every word (no ignore_merges), and no BOS unless the file asks for one.
      {.names = {"dbrx"},
       .splits = {kLlama3SplitSpelledOut}},
      // Mistral's Tekken (Mistral NeMo, Ministral): letter runs split at case changes, single digits.
      {.names = {"tekken"},
       .splits = {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}|"
        " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       .ignore_merges = true, .add_bos = true},
      // GPT-4o's o200k split (Phi-4-mini's tokenizer): Tekken's case-aware letter runs with English contractions
      // kept on, digits in runs of up to three.
      {.names = {"gpt-4o"},
       .splits = {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
        "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
  };
  return families;
}

// The family a gpt2-model file's tokenizer.ggml.pre names ("default" when it names none); an unknown name is an
// error listing the known ones.
const PreTokenizerFamily* pre_tokenizer_family(const GgufFile& g, const std::string& file) {
  const std::string pre = g.get_string("tokenizer.ggml.pre", "default");
  for (const auto& f : pre_tokenizer_families())
    if (std::find(f.names.begin(), f.names.end(), pre) != f.names.end()) return &f;
  std::string known;
  for (const auto& f : pre_tokenizer_families())
    for (const auto& n : f.names) known += (known.empty() ? "" : ", ") + n;
  throw InputError(file, "unsupported tokenizer.ggml.pre \"" + pre + "\" (supported: " + known + ")");
}

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<int64_t> types;
  std::vector<double> scores;  // llama only
};

Vocab read_vocab(const GgufFile& g, bool need_scores) {
  const std::string& file = g.path();
  Vocab v;
  v.tokens = g.get_string_array("tokenizer.ggml.tokens");
  if (v.tokens.empty()) throw InputError(file, "tokenizer.ggml.tokens is empty");
  if (v.tokens.size() > 10'000'000) throw InputError(file, "tokenizer.ggml.tokens has an implausible size");
  const size_t n = v.tokens.size();
  if (g.has("tokenizer.ggml.token_type")) {
    v.types = g.get_int_array("tokenizer.ggml.token_type");
    if (v.types.size() != n)
      throw InputError(file, "tokenizer.ggml.token_type has " + std::to_string(v.types.size()) + " entries for " +
                                 std::to_string(n) + " tokens");
  } else {
    v.types.assign(n, kNormal);
  }
  if (need_scores) {
    v.scores = g.get_float_array("tokenizer.ggml.scores");
    if (v.scores.size() != n)
      throw InputError(file, "tokenizer.ggml.scores has " + std::to_string(v.scores.size()) + " entries for " +
                                 std::to_string(n) + " tokens");
  }
  return v;
}

std::optional<int64_t> token_id_key(const GgufFile& g, const std::string& key, size_t n_tokens) {
  if (!g.has(key)) return std::nullopt;
  const int64_t id = g.get_int(key);
  // llama.cpp writes -1 (as a signed int) or leaves the key out for "none".
  if (id < 0) return std::nullopt;
  if (size_t(id) >= n_tokens)
    throw InputError(g.path(), key + " is " + std::to_string(id) + ", outside the " + std::to_string(n_tokens) +
                                   "-token vocabulary");
  return id;
}

json vocab_object(const Vocab& v) {
  json vocab = json::object();
  // Unused ids (llama.cpp's "[PAD<id>]" fillers up to the model's vocabulary size) stay out, as they are not in
  // the tokenizer the file was converted from; decoding one gives nothing. A duplicated string keeps its first id.
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.types[i] != kUnused && !vocab.contains(v.tokens[i])) vocab[v.tokens[i]] = int64_t(i);
  return vocab;
}

// The tokens matched in prompt text before the rest is tokenized, as llama.cpp's tokenizer matches them (its
// cache_special_tokens with parse_special, which is what encode(text, true) is): CONTROL and UNKNOWN ones as
// special tokens, so "a <unk> b" gives <unk>'s id and not '<', 'unk', '>'; USER_DEFINED ones as added tokens.
// All of them in the raw text (normalized: false), so the text after one is a piece of its own: SentencePiece
// files then give it its "▁" prefix as llama.cpp does after every special fragment ("[INST] hi" -> [INST], ▁, ▁hi).
// `phi3_rstrip`: Phi-3 and 3.5's SentencePiece tokenizers, whose tokenizer.json gives their chat tokens (and </s>)
// rstrip, so the line break the chat template writes after <|user|> is swallowed by it; GGUF keeps no such flag.
// llama.cpp patches them back (llama-vocab.cpp: rstrip on every such token but <unk>, <s> and <|endoftext|>), keyed
// on general.name holding "phi3" or "phi-3"; SpecScope keys the same patch on the architecture, so a file its
// converter named "Phi 3 Mini 4k Instruct" is tokenized as Hugging Face's tokenizer does too.
json added_tokens(const Vocab& v, bool phi3_rstrip) {
  json list = json::array();
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.types[i] != kControl && v.types[i] != kUnknown && v.types[i] != kUserDefined) continue;
    const bool special = v.types[i] != kUserDefined;
    const std::string& t = v.tokens[i];
    const bool rstrip = phi3_rstrip && t != "<unk>" && t != "<s>" && t != "<|endoftext|>";
    list.push_back({{"id", int64_t(i)}, {"content", t}, {"single_word", false}, {"lstrip", false},
                    {"rstrip", rstrip}, {"normalized", false}, {"special", special}});
  }
  return list;
}

json bos_template(const Vocab& v, std::optional<int64_t> bos, bool add_bos) {
  if (!add_bos || !bos) return nullptr;
  const std::string& name = v.tokens[size_t(*bos)];
  json single = json::array();
  single.push_back({{"SpecialToken", {{"id", name}, {"type_id", 0}}}});
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  return {{"type", "TemplateProcessing"},
          {"single", single},
          {"pair", single},
          {"special_tokens", {{name, {{"id", name}, {"ids", json::array({*bos})}, {"tokens", json::array({name})}}}}}};
}

constexpr size_t kMaxMergedPieceBytes = 256;

// Byte offsets where a UTF-8 string can be split into two non-empty parts.
std::vector<size_t> char_boundaries(const std::string& s) {
  std::vector<size_t> b;
  for (size_t i = 1; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) b.push_back(i);
  return b;
}

// SentencePiece BPE keeps no merge list: a pair merges when their concatenation is a vocabulary piece, the piece
// with the highest score first. As a merge list (transformers' SentencePieceExtractor): every split (l, r) of
// every piece into two pieces, ranked by the piece's score (descending), then by piece id, then by l's and r's ids.
json merges_from_scores(const Vocab& v) {
  std::unordered_map<std::string, int64_t> id;
  auto mergeable = [&](int64_t t) { return v.types[size_t(t)] == kNormal || v.types[size_t(t)] == kUserDefined; };
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (mergeable(int64_t(i))) id.emplace(v.tokens[i], int64_t(i));
  struct Merge {
    double score;
    int64_t piece, l, r;
  };
  std::vector<Merge> merges;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (!mergeable(int64_t(i))) continue;
    const std::string& t = v.tokens[i];
    // SentencePiece pieces are short (16 characters by default); a longer one is only ever matched whole, and
    // splitting it would cost len^2 for a hostile file.
    if (t.size() > kMaxMergedPieceBytes) continue;
    for (size_t k : char_boundaries(t)) {
      auto l = id.find(t.substr(0, k));
      auto r = id.find(t.substr(k));
      if (l != id.end() && r != id.end()) merges.push_back({v.scores[i], int64_t(i), l->second, r->second});
    }
  }
  std::sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    return std::tie(b.score, a.piece, a.l, a.r) < std::tie(a.score, b.piece, b.l, b.r);
  });
  json out = json::array();
  for (const auto& m : merges) out.push_back({v.tokens[size_t(m.l)], v.tokens[size_t(m.r)]});
  return out;
}

json build_json(const GgufFile& g) {
  const std::string& file = g.path();
  const std::string model = g.get_string("tokenizer.ggml.model");
  if (model != "gpt2" && model != "llama")
    throw InputError(file, "unsupported tokenizer.ggml.model \"" + model + "\" (supported: gpt2, llama)");
  const bool spm = model == "llama";
  const Vocab v = read_vocab(g, spm);
  const auto bos = token_id_key(g, "tokenizer.ggml.bos_token_id", v.tokens.size());
  const PreTokenizerFamily* family = spm ? nullptr : pre_tokenizer_family(g, file);
  const bool add_bos = g.get_bool("tokenizer.ggml.add_bos_token", spm || family->add_bos);
  if (add_bos && !bos) throw InputError(file, "tokenizer.ggml.add_bos_token is set but there is no bos_token_id");

  const bool phi3_rstrip = spm && g.get_string("general.architecture", "") == "phi3";
  json root = {{"version", "1.0"},
               {"added_tokens", added_tokens(v, phi3_rstrip)},
               {"post_processor", bos_template(v, bos, add_bos)}};
  json bpe = {{"type", "BPE"}, {"dropout", nullptr}, {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr}, {"vocab", vocab_object(v)}};
  if (spm) {
    const bool space_prefix = g.get_bool("tokenizer.ggml.add_space_prefix", true);
    json norms = json::array();
    if (space_prefix) norms.push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
    norms.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}});
    root["normalizer"] = {{"type", "Sequence"}, {"normalizers", norms}};
    root["pre_tokenizer"] = nullptr;
    json decs = json::array();
    decs.push_back({{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}});
    decs.push_back({{"type", "ByteFallback"}});
    decs.push_back({{"type", "Fuse"}});
    if (space_prefix) decs.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1u}, {"stop", 0u}});
    root["decoder"] = {{"type", "Sequence"}, {"decoders", decs}};
    const auto unk = token_id_key(g, "tokenizer.ggml.unknown_token_id", v.tokens.size());
    bpe["unk_token"] = unk ? json(v.tokens[size_t(*unk)]) : json(nullptr);
    bpe["fuse_unk"] = true;
    bpe["byte_fallback"] = true;
    bpe["ignore_merges"] = false;
    bpe["merges"] = merges_from_scores(v);
  } else {
    json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
    bool ignore_merges = false;
    root["normalizer"] = nullptr;
    byte_level["use_regex"] = family->gpt2_split;
    json seq = json::array();
    for (const auto& regex : family->splits)
      seq.push_back({{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}});
    seq.push_back(byte_level);
    root["pre_tokenizer"] = seq.size() == 1 ? seq[0] : json{{"type", "Sequence"}, {"pretokenizers", seq}};
    if (family->nfc) root["normalizer"] = {{"type", "NFC"}};
    ignore_merges = family->ignore_merges;
    root["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
    bpe["unk_token"] = nullptr;
    bpe["fuse_unk"] = false;
    bpe["byte_fallback"] = false;
    bpe["ignore_merges"] = ignore_merges;
    const auto merges = g.get_string_array("tokenizer.ggml.merges");
    bpe["merges"] = merges;
  }
  root["model"] = std::move(bpe);
  return root;
}

}  // namespace

std::string gguf_tokenizer_json(const GgufFile& g) {
  return build_json(g).dump(1, ' ', false, json::error_handler_t::replace);
}

std::shared_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& g) {
  const std::string& file = g.path();
  const json root = build_json(g);
  std::shared_ptr<tok::HfTokenizer> tok;
  try {
    tok = std::make_shared<tok::HfTokenizer>(root, file);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, std::string("tokenizer metadata: ") + e.what());
  }
  const size_t n = g.array_size("tokenizer.ggml.tokens");
  auto id = [&](const char* key) -> std::optional<int32_t> {
    const auto v = token_id_key(g, key, n);
    if (!v) return std::nullopt;
    return int32_t(*v);
  };
  tok->bos_id = id("tokenizer.ggml.bos_token_id");
  tok->eos_id = id("tokenizer.ggml.eos_token_id");
  tok->pad_id = id("tokenizer.ggml.padding_token_id");
  tok->unk_id = id("tokenizer.ggml.unknown_token_id");
  tok->add_bos = tok->post_processor() && !tok->post_processor()->prefix_ids().empty();
  return tok;
}

std::shared_ptr<ChatTemplate> chat_template_from_gguf(const GgufFile& g, const Tokenizer& tok) {
  const std::string text = g.get_string("tokenizer.chat_template", "");
  const std::string bos = tok.bos_id ? tok.token_piece(*tok.bos_id) : "";
  const std::string eos = tok.eos_id ? tok.token_piece(*tok.eos_id) : "";
  return ChatTemplate::detect(text, bos, eos);
}

}  // namespace specscope
