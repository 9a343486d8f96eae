#pragma once
// The chat options run and compare share: --chat (prompts go through the model's chat template), --system TEXT
// (a system message before each prompt) and --messages FILE.json (a whole conversation instead of --prompt,
// as an OpenAI-style list [{"role": ..., "content": "..."}, ...]). --system and --messages imply --chat.
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "engine/tokenizer/chat_template.h"
#include "runs/job.h"

namespace specscope::cli {

// An OpenAI-style message list: a JSON array of objects with a string "role" and a string "content" (other
// fields are ignored). Throws InputError naming the file (and the message) when it is anything else or empty.
std::vector<ChatMessage> read_messages_file(const std::string& path);

// The prompts of run (single: one prompt) or compare: --messages FILE, else --prompt/--prompt-file, each with
// --system's message before it when given. Sets `chat` when the prompts are to go through the chat template.
std::vector<runs::Prompt> read_chat_prompts(Args& args, bool single, bool& chat);

}  // namespace specscope::cli
