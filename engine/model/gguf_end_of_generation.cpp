#include "engine/model/gguf_end_of_generation.h"

#include <algorithm>
#include <optional>
#include <span>
#include <string_view>

#include "engine/formats/gguf.h"
#include "engine/tokenizer/tokenizer.h"

namespace specscope {

namespace {

// llama.cpp's list of end-of-generation token texts (llama_vocab::impl::load, "maintain a list of tokens that cause
// end-of-generation").
constexpr std::string_view kEndNames[] = {
    "<|eot_id|>",    "<|im_end|>",         "<|end|>",         "<|return|>",          "<|call|>",
    "<|flush|>",     "<|calls|>",          "<end_of_turn>",   "<|endoftext|>",       "</s>",
    "<|eom_id|>",    "<EOT>",              "_<EOT>",          "[EOT]",               "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>",         "<turn|>",             "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~["};
// Fill-in-the-middle tokens, found by name where the file has no key for them (the first name present, in this
// order, is taken).
constexpr std::string_view kFimPadNames[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRepNames[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepNames[] = {"<|file_sep|>"};

}  // namespace

std::vector<int> gguf_end_of_generation_ids(const GgufFile& g, const Tokenizer& tok, const std::vector<int>& eos_ids,
                                            int vocab_size) {
  auto in_vocab = [&](int64_t id) { return id >= 0 && id < vocab_size; };
  auto key_id = [&](const char* key) -> std::optional<int> {
    if (!g.has(key)) return std::nullopt;
    const int64_t id = g.get_int(key);
    return in_vocab(id) ? std::optional<int>(int(id)) : std::nullopt;
  };
  auto named = [&](std::string_view name) -> std::optional<int> {
    const auto id = tok.piece_to_id(name);
    return id && in_vocab(*id) ? std::optional<int>(*id) : std::nullopt;
  };

  std::vector<int> first, rest;  // the file's own ids; the others
  for (int id : eos_ids)
    if (in_vocab(id) && std::find(first.begin(), first.end(), id) == first.end()) first.push_back(id);
  auto add = [&](std::optional<int> id) {
    if (id && std::find(first.begin(), first.end(), *id) == first.end() &&
        std::find(rest.begin(), rest.end(), *id) == rest.end())
      rest.push_back(*id);
  };
  auto fim = [&](const char* key, std::span<const std::string_view> names) {
    if (g.has(key)) return add(key_id(key));
    for (std::string_view n : names)
      if (const auto id = named(n)) return add(id);
  };
  fim("tokenizer.ggml.fim_pad_token_id", kFimPadNames);
  fim("tokenizer.ggml.fim_rep_token_id", kFimRepNames);
  fim("tokenizer.ggml.fim_sep_token_id", kFimSepNames);
  for (std::string_view n : kEndNames) add(named(n));

  // llama.cpp's two exceptions, judged on the whole set.
  auto text_in_set = [&](std::string_view name) -> std::optional<int> {
    const auto id = named(name);
    if (!id) return std::nullopt;
    const bool in = std::find(first.begin(), first.end(), *id) != first.end() ||
                    std::find(rest.begin(), rest.end(), *id) != rest.end();
    return in ? id : std::nullopt;
  };
  auto drop = [&](int id) {
    first.erase(std::remove(first.begin(), first.end(), id), first.end());
    rest.erase(std::remove(rest.begin(), rest.end(), id), rest.end());
  };
  const bool has_call = text_in_set("<|call|>") || text_in_set("<|calls|>");
  if (const auto end = text_in_set("<|end|>"); end && has_call && (text_in_set("<|return|>") || text_in_set("<|flush|>")))
    drop(*end);  // harmony (o200k_harmony) and solar-open: <|end|> ends a message, not the turn
  if (const auto s = text_in_set("</s>"); s && (text_in_set("<|tool_response>") || text_in_set("<|plamo:eos|>")))
    drop(*s);  // gemma4 and plamo: </s> is a normal token there

  std::sort(rest.begin(), rest.end());
  first.insert(first.end(), rest.begin(), rest.end());
  return first;
}

}  // namespace specscope
