#include "engine/generate/generator.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/model/model.h"
#include "engine/model/tokenizer_fit.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"

namespace specscope {

std::string StopMatcher::feed(const std::string& piece) {
  if (stopped_) return {};
  pending_ += piece;
  for (const auto& s : stops_) {
    auto at = pending_.find(s);
    if (!s.empty() && at != std::string::npos) {
      stopped_ = true;
      std::string out = pending_.substr(0, at);
      pending_.clear();
      return out;
    }
  }
  // Hold back the longest suffix that is a prefix of some stop string.
  size_t hold = 0;
  for (const auto& s : stops_)
    for (size_t k = s.empty() ? 0 : std::min(s.size() - 1, pending_.size()); k > hold; --k)
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(pending_);
  return stopped_ ? std::string() : out;
}

std::vector<int32_t> encode_conversation(const Model& model, const std::vector<ChatMessage>& messages,
                                         const nlohmann::ordered_json& template_kwargs) {
  for (const auto& m : messages)
    for (const std::string* text : {&m.content, &m.reasoning})
      if (find_invalid_utf8(*text) != std::string::npos)
        throw InputError("prompt", "invalid UTF-8 at byte " + std::to_string(find_invalid_utf8(*text)));
  // The variables go on a copy: the model's template is shared by every lane and job using the model.
  std::optional<ChatTemplate> with_kwargs;
  if (!template_kwargs.empty()) {
    with_kwargs.emplace(model.chat_template());
    for (const auto& [name, value] : template_kwargs.items()) with_kwargs->set_variable(name, value);
  }
  const ChatTemplate& tmpl = with_kwargs ? *with_kwargs : model.chat_template();
  std::vector<int32_t> ids = model.tokenizer().encode(tmpl.render(messages, true), !tmpl.renders_bos());
  if (ids.empty()) throw InputError("prompt", "empty prompt");
  check_prompt_ids(model.tokenizer(), ids, model.config().vocab_size);
  return ids;
}

std::vector<int32_t> encode_prompt(const Model& model, const std::string& prompt, bool chat,
                                   const nlohmann::ordered_json& template_kwargs) {
  if (chat) return encode_conversation(model, {{"user", prompt}}, template_kwargs);
  if (find_invalid_utf8(prompt) != std::string::npos)
    throw InputError("prompt", "invalid UTF-8 at byte " + std::to_string(find_invalid_utf8(prompt)));
  std::vector<int32_t> ids = model.tokenizer().encode(prompt, true);
  if (ids.empty()) throw InputError("prompt", "empty prompt");
  check_prompt_ids(model.tokenizer(), ids, model.config().vocab_size);
  return ids;
}

ReplyShape reply_shape_of(const Model& model, const std::vector<int32_t>& prompt) {
  const ReplyFormat format = model.chat_template().reply_format();
  // The last few tokens hold "<think>" and the newline after it in every tokenizer that has the tag.
  constexpr size_t kTail = 8;
  const size_t from = prompt.size() > kTail ? prompt.size() - kTail : 0;
  const std::vector<int32_t> tail(prompt.begin() + std::ptrdiff_t(from), prompt.end());
  return reply_shape_after(format, model.tokenizer().decode(tail, /*skip_special=*/false));
}

GenerateResult generate(const Model& model, Context& ctx, const std::vector<int32_t>& prompt,
                        const GenerateOptions& opts, const TokenCallback& on_token) {
  using clock = std::chrono::steady_clock;
  opts.sampling.validate();
  if (opts.max_tokens < 0) throw InputError("--max-tokens", "must be >= 0");
  if (int(prompt.size()) + 1 > ctx.n_ctx() - ctx.n_past())
    throw InputError("prompt", "the prompt has " + std::to_string(prompt.size()) +
                                   " tokens, more than fits the context of " + std::to_string(ctx.n_ctx()) + " tokens");
  GenerateResult r;
  r.prompt_tokens = int(prompt.size());
  Rng rng(opts.sampling.seed);
  StreamingDecoder decoder(model.tokenizer(), /*skip_special=*/!opts.keep_special_text);
  StopMatcher stops(opts.stop_strings);
  const auto& eos = model.eos_ids();
  const int V = model.config().vocab_size;

  ForwardOutput out;
  Batch b = Batch::causal(prompt);
  b.logit_rows = {int(prompt.size()) - 1};
  auto t0 = clock::now();
  ctx.forward(b, out);
  r.target_forwards = 1;
  auto t1 = clock::now();
  r.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
  r.stop_reason = "max_tokens";
  for (int step = 0; step < opts.max_tokens; ++step) {
    // Greedy decoding reads only the argmax: after the prompt, the forward may return it summarized (a device
    // backend then sends one summary instead of the vocabulary's logits).
    int32_t tok = out.summarized() ? out.row_argmax(0) : sample_token(out.row_logits(0), V, opts.sampling, rng);
    if (opts.stop_at_eos && std::find(eos.begin(), eos.end(), tok) != eos.end()) {
      r.stop_reason = "eos";
      break;
    }
    r.tokens.push_back(tok);
    std::string piece = stops.feed(decoder.push(tok));
    r.text += piece;
    if (on_token && !on_token(tok, piece)) {
      r.stop_reason = "callback";
      break;
    }
    if (stops.stopped()) {
      r.stop_reason = "stop_string";
      break;
    }
    if (step + 1 == opts.max_tokens) break;
    if (ctx.n_past() + 1 > ctx.n_ctx()) {
      r.stop_reason = "context";
      break;
    }
    Batch nb;
    nb.tokens = {tok};
    nb.summaries_only = opts.sampling.greedy();
    ctx.forward(nb, out);
    ++r.target_forwards;
  }
  if (r.stop_reason != "stop_string") {
    std::string tail = stops.feed(decoder.flush()) + stops.flush();
    r.text += tail;
    if (on_token && !tail.empty()) on_token(-1, tail);
  }
  r.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  return r;
}

}  // namespace specscope
