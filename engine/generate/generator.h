#pragma once
// Vanilla autoregressive generation: prefill, then one token per target forward, with a streaming callback,
// EOS and stop strings, and a token limit. Speculative methods reuse the same stopping and streaming rules.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/generate/reply_parts.h"
#include "engine/model/forward.h"
#include "engine/sampling/sampler.h"

namespace specscope {

class Model;
struct ChatMessage;

struct GenerateOptions {
  int max_tokens = 128;
  SamplingParams sampling;
  std::vector<std::string> stop_strings;
  bool stop_at_eos = true;
  // The text keeps the special tokens' own text (tokenizer decode with skip_special false). A harmony reply needs
  // it: its channel markers are special tokens, and without them the reasoning and the answer run together as
  // "analysis...assistantfinal..." (reply_parts.h). The tokens are the same either way.
  bool keep_special_text = false;
};

// Called once per committed token with the text it completes (possibly empty while a UTF-8 sequence is
// incomplete). Return false to stop.
using TokenCallback = std::function<bool(int32_t token, const std::string& text_piece)>;

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated tokens (EOS excluded)
  std::string text;             // their text, cut at a stop string if one matched
  std::string stop_reason;      // "eos" | "stop_string" | "max_tokens" | "callback" | "context"
  int prompt_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  int target_forwards = 0;
  double prefill_tokens_per_second() const { return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0; }
  double decode_tokens_per_second() const {
    return decode_seconds > 0 ? double(tokens.size()) / decode_seconds : 0;
  }
};

// Tracks stop strings over the streamed text; holds back text that might be the start of a stop string.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Feeds new text; returns text that is safe to show now. Sets stopped() when a stop string completes
  // (the stop string and anything after it are never returned).
  std::string feed(const std::string& piece);
  std::string flush();  // releases held-back text at the end (no stop matched)
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

// Encodes the prompt (chat-formatted when `chat`) and checks it fits the context with room to generate.
std::vector<int32_t> encode_prompt(const Model& model, const std::string& prompt, bool chat,
                                   const nlohmann::ordered_json& template_kwargs = nlohmann::ordered_json::object());
// Encodes a whole conversation through the model's chat template, ready for the assistant's next answer.
// `template_kwargs` (a JSON object) are extra template variables, as the keyword arguments of transformers'
// apply_chat_template and llama.cpp's --chat-template-kwargs ({"enable_thinking": false} for Qwen3); only a
// model's own (interpreted) template sees them. Throws InputError for invalid UTF-8 in any message or an empty
// result.
std::vector<int32_t> encode_conversation(
    const Model& model, const std::vector<ChatMessage>& messages,
    const nlohmann::ordered_json& template_kwargs = nlohmann::ordered_json::object());

// How the reply to `prompt` (encoded through the model's chat template) marks its reasoning: the template's
// format, and whether the prompt's end already opened the reasoning.
ReplyShape reply_shape_of(const Model& model, const std::vector<int32_t>& prompt);

GenerateResult generate(const Model& model, Context& ctx, const std::vector<int32_t>& prompt,
                        const GenerateOptions& opts, const TokenCallback& on_token = {});

}  // namespace specscope
