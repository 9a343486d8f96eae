#pragma once
// The chat options run and compare share: --chat (prompts go through the model's chat template), --system TEXT
// (a system message before each prompt), --messages FILE.json (a whole conversation instead of --prompt, as an
// OpenAI-style list [{"role": ..., "content": "..."}, ...]) and --chat-template-kwargs JSON (extra template
// variables, as llama.cpp's flag of that name: '{"enable_thinking": false}' for Qwen3). All but --chat imply it.
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
// --system's message before it when given, into job.prompts; job.chat when they are to go through the chat
// template, with job.template_kwargs. Throws InputError naming the flag or file for anything malformed.
void read_chat_input(Args& args, bool single, runs::Job& job);

}  // namespace specscope::cli
