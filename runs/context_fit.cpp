#include "runs/context_fit.h"

#include <algorithm>

#include "engine/generate/generator.h"
#include "engine/model/model.h"
#include "engine/util/error.h"

namespace specscope::runs {

int answer_room(int n_ctx, int prompt_tokens) { return std::max(0, n_ctx - prompt_tokens + 1); }

namespace {

// The first message the trimmed conversation may start at after dropping one more turn from `from` (a turn: a
// message and everything up to the next user message). Returns `from` when nothing more can go.
size_t next_turn(const std::vector<ChatMessage>& m, size_t from, size_t last_user) {
  size_t i = from + 1;
  while (i < last_user && m[i].role != "user") ++i;
  return std::min(i, last_user);
}

}  // namespace

FittedPrompt fit_prompt(const Model& model, const Prompt& p, bool chat, int n_ctx, int max_tokens,
                        const nlohmann::ordered_json& template_kwargs) {
  FittedPrompt out;
  out.use.n_ctx = n_ctx;
  if (!chat || p.conversation.empty()) {
    out.ids = encode_prompt(model, p.text, chat, template_kwargs);  // a single prompt that does not fit is the generator's error
  } else {
    const auto& m = p.conversation;
    size_t n_system = 0;
    while (n_system < m.size() && m[n_system].role == "system") ++n_system;
    size_t last_user = m.size() - 1;
    while (last_user > n_system && m[last_user].role != "user") --last_user;
    const int reserve = std::min(std::max(max_tokens, 1), std::max(n_ctx / 2, 1));
    size_t start = n_system;  // the first kept message after the system prompt
    for (;;) {
      std::vector<ChatMessage> kept(m.begin(), m.begin() + long(n_system));
      kept.insert(kept.end(), m.begin() + long(start), m.end());
      out.ids = encode_conversation(model, kept, template_kwargs);
      if (int(out.ids.size()) + reserve <= n_ctx) break;
      const size_t next = next_turn(m, start, last_user);
      if (next == start) break;  // only the last question is left: it goes in with whatever room remains
      start = next;
    }
    out.use.dropped_messages = int(start - n_system);
    if (int(out.ids.size()) + 1 > n_ctx)
      throw InputError("prompt", "the last message alone has " + std::to_string(out.ids.size()) +
                                     " tokens with the chat template, more than fits the context of " +
                                     std::to_string(n_ctx) + " tokens; shorten it");
  }
  if (int(out.ids.size()) + 1 > n_ctx)  // checked here too, so no note is made about a prompt that cannot run
    throw InputError("prompt", "the prompt has " + std::to_string(out.ids.size()) +
                                   " tokens, more than fits the context of " + std::to_string(n_ctx) + " tokens");
  out.use.prompt_tokens = int(out.ids.size());
  out.use.answer_room = answer_room(n_ctx, out.use.prompt_tokens);
  out.use.max_tokens = max_tokens;
  return out;
}

std::string max_tokens_note(const ContextUse& use) {
  if (!use.max_tokens_beyond()) return "";
  return "max tokens " + std::to_string(use.max_tokens) + " is more than the context leaves: the prompt takes " +
         std::to_string(use.prompt_tokens) + " of " + std::to_string(use.n_ctx) + " tokens, so the answer stops at " +
         std::to_string(use.answer_room) + " tokens at most";
}

std::string trimmed_note(const ContextUse& use) {
  if (use.dropped_messages <= 0) return "";
  return std::to_string(use.dropped_messages) + (use.dropped_messages == 1 ? " earlier message" : " earlier messages") +
         " left out to fit the context of " + std::to_string(use.n_ctx) + " tokens";
}

std::string context_full_note(const ContextUse& use) {
  return "context full: the answer reached the end of the model's context of " + std::to_string(use.n_ctx) + " tokens";
}

}  // namespace specscope::runs
