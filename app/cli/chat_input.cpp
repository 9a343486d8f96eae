#include "app/cli/chat_input.h"

#include <nlohmann/json.hpp>

#include "app/cli/method_flags.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"
#include "runs/template_kwargs.h"

namespace specscope::cli {

std::vector<ChatMessage> read_messages_file(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_array())
    throw InputError(path, "expected a JSON list of messages [{\"role\": ..., \"content\": \"...\"}, ...]");
  if (j.empty()) throw InputError(path, "holds no messages");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& m = j[i];
    const std::string which = "message " + std::to_string(i + 1);
    if (!m.is_object()) throw InputError(path, which + " is not an object with \"role\" and \"content\"");
    if (!m.contains("role") || !m["role"].is_string() || m["role"].get<std::string>().empty())
      throw InputError(path, which + " has no string \"role\"");
    if (!m.contains("content") || !m["content"].is_string())
      throw InputError(path, which + " has no string \"content\" (content parts and null content are not supported)");
    ChatMessage message{m["role"].get<std::string>(), m["content"].get<std::string>()};
    // An earlier answer's reasoning, under either name the published templates read (ChatMessage::reasoning).
    for (const char* key : {"reasoning_content", "thinking"}) {
      if (!m.contains(key) || m[key].is_null()) continue;
      if (!m[key].is_string()) throw InputError(path, which + " has a \"" + key + "\" that is not a string");
      const std::string text = m[key].get<std::string>();
      if (!message.reasoning.empty() && message.reasoning != text)
        throw InputError(path, which + " has both \"reasoning_content\" and \"thinking\", and they differ");
      message.reasoning = text;
    }
    out.push_back(std::move(message));
  }
  return out;
}

namespace {

std::vector<runs::Prompt> read_chat_prompts(Args& args, bool single, bool& chat) {
  const auto system = args.get("--system");
  const auto messages = args.get("--messages");
  chat = chat || args.has("--chat") || system || messages;
  if (system && find_invalid_utf8(*system) != std::string::npos)
    throw InputError("--system", "invalid UTF-8 at byte " + std::to_string(find_invalid_utf8(*system)));
  std::vector<runs::Prompt> out;
  if (messages) {
    if (args.get("--prompt") || args.get("--prompt-file"))
      throw InputError("--messages", "give either --messages or --prompt/--prompt-file, not both");
    std::vector<ChatMessage> conv = read_messages_file(*messages);
    if (system) {
      if (conv.front().role == "system")
        throw InputError("--system", "'" + *messages + "' already starts with a system message; give one or the other");
      conv.insert(conv.begin(), {"system", *system});
    }
    // The text a run is listed by: the last thing the user said.
    std::string text = conv.back().content;
    for (auto it = conv.rbegin(); it != conv.rend(); ++it)
      if (it->role == "user") {
        text = it->content;
        break;
      }
    out.push_back({text, std::move(conv)});
    return out;
  }
  const std::vector<std::string> prompts = single ? std::vector<std::string>{read_prompt(args)} : read_prompts(args);
  for (const auto& p : prompts) {
    runs::Prompt prompt{p, {}};
    if (system) prompt.conversation = {{"system", *system}, {"user", p}};
    out.push_back(std::move(prompt));
  }
  return out;
}

}  // namespace

void read_chat_input(Args& args, bool single, runs::Job& job) {
  if (const auto kwargs = args.get("--chat-template-kwargs")) {
    job.template_kwargs = runs::parse_template_kwargs(*kwargs, "--chat-template-kwargs");
    job.chat = true;
  }
  job.prompts = read_chat_prompts(args, single, job.chat);
}

}  // namespace specscope::cli
