#pragma once
// Fitting a prompt into a run's context, as chat apps do: a conversation that would leave too little room for
// the answer loses its oldest turns (the system prompt stays, the last user message always), and the run
// reports how many messages it left out and how long the answer can be before the context is full. One copy,
// used by the runner for the CLI and the app alike.
#include <cstdint>
#include <string>
#include <vector>

#include "runs/job.h"

namespace specscope {
class Model;
}

namespace specscope::runs {

// How a prompt went into a run's context.
struct ContextUse {
  int n_ctx = 0;              // the run's context, in tokens
  int prompt_tokens = 0;      // after trimming
  int dropped_messages = 0;   // oldest non-system messages of the conversation left out (whole turns)
  int answer_room = 0;        // the most tokens the answer can have before the context is full
  int max_tokens = 0;         // the job's limit
  // The limit is more than the context leaves: the answer may end at "context" first.
  bool max_tokens_beyond() const { return max_tokens > answer_room; }
};

struct FittedPrompt {
  std::vector<int32_t> ids;
  ContextUse use;
};

// The tokens an answer can have after `prompt_tokens` in a context of `n_ctx`: every token but the last one
// generated must enter the cache, so one more than the free slots.
int answer_room(int n_ctx, int prompt_tokens);

// Encodes `p` for `model` (chat: through its template) to fit `n_ctx` tokens. A conversation keeps room for
// min(max_tokens, n_ctx / 2) answer tokens (so a huge max_tokens cannot push out all history); turns are dropped
// oldest first, a user message with the replies after it at a time, so the kept history still alternates as
// chat templates require. Throws InputError("prompt", ...) when even the last message alone does not fit.
// `template_kwargs`: the job's extra chat-template variables (encode_conversation).
FittedPrompt fit_prompt(const Model& model, const Prompt& p, bool chat, int n_ctx, int max_tokens,
                        const nlohmann::ordered_json& template_kwargs = nlohmann::ordered_json::object());

// The notes the CLI and the app show, in one wording: max_tokens beyond the room left ("" when it fits), a
// conversation trimmed ("" when nothing was left out), and an answer that reached the end of the context.
std::string max_tokens_note(const ContextUse& use);
std::string trimmed_note(const ContextUse& use);
std::string context_full_note(const ContextUse& use);

}  // namespace specscope::runs
