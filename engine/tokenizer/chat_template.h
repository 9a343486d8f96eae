#pragma once
// Chat formatting. HF models carry a Jinja chat_template in tokenizer_config.json (or chat_template.jinja), GGUF
// files in tokenizer.chat_template. SpecScope runs that template itself, the way transformers'
// apply_chat_template does, with its own small Jinja interpreter (engine/tokenizer/jinja/, template.h lists the
// supported subset): the prompt is the model's own, token for token, whatever family it belongs to.
//
// The template is also recognized (detect), for the family names `info` shows and as a fallback: models without
// a template, and templates the interpreter cannot parse (logged as a warning), are rendered natively by the
// renderers below, which reproduce the published templates of the families SpecScope knows.
//
// Recognition works on the template's structure, not its spelling: the template is scanned into
// string literals plus a canonical code form (blanks, quote style, `-` trim markers, comments and
// `x['key']` vs `x.key` normalized away), then
//   1. the family is chosen by marker tokens in its literals (<|start_header_id|>, <<SYS>>, [INST], <|im_start|>,
//      <|user|>, "USER: "/"ASSISTANT:"); nothing matching -> Plain;
//   2. the variant is the published template of that family whose characteristic code fragments (how each turn
//      is built, where the system message goes, what the generation prompt is) are all present; parameters
//      that vary between repos (default system prompt, knowledge-cutoff line, default date, leading BOS) are
//      read from the template's own literals.
// When the markers name a family but no published variant's fragments are all there (a fine-tune that edited
// the template), the closest variant is named and approximate() is true; that matters only where the native
// renderers are used. Native variants (see chat_template.cpp for the sources): llama2-chat (+ no-strip),
// llama3 (3.0, and its first release), llama3.1, llama3.2, mistral-v0.1/-v0.2 (first releases),
// mistral-v0.2-system (2024 revision), mistral-v0.3, mistral-nemo, chatml (+ leading BOS), qwen1.5, qwen2,
// qwen2.5, vicuna-v1.1 (FastChat), vicuna-v1.5-fallback, vicuna-newline, zephyr (= TinyLlama chat), plain.
//
// Tools / tool_calls are not modelled (ChatMessage has no such fields): the template sees tools=None and
// messages of role and content, and an assistant message's reasoning (engine/generate/reply_parts.h) where it has
// one.
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/generate/reply_parts.h"

namespace specscope {

namespace jinja {
class Template;
struct Dict;
}  // namespace jinja

struct ChatMessage {
  std::string role;  // system | user | assistant (other role names are passed to the template as-is)
  std::string content;
  // An assistant answer's reasoning, kept apart from its content (engine/generate/reply_parts.h). Non-empty, it is
  // passed to the template under both names the published templates read: `reasoning_content` (Qwen3) and
  // `thinking` (gpt-oss's harmony), as a transformers user passes it; each template decides whether to show it.
  std::string reasoning = {};
};

class ChatTemplate {
 public:
  enum class Family { Llama2, Llama3, Mistral, ChatML, Vicuna, Zephyr, Plain };

  // The model's own template, run by the interpreter (and recognized, for family_name() and the fallback).
  // Empty text -> Plain. A template the interpreter cannot parse is rendered natively, with a logged warning and
  // note() saying so. bos/eos are the tokenizer's strings.
  static std::shared_ptr<ChatTemplate> detect(const std::string& jinja_template, const std::string& bos_token,
                                              const std::string& eos_token);
  // Recognition only: the closest native renderer, never the interpreter (the fallback path, and its tests).
  static std::shared_ptr<ChatTemplate> native(const std::string& jinja_template, const std::string& bos_token,
                                              const std::string& eos_token);
  // Reads chat_template (string or list-of-named-templates form, where "default" is used) and bos/eos (strings
  // or {"content": ...} objects) from tokenizer_config.json; `path` may also be the model directory. A
  // chat_template.jinja next to the config (where newer transformers save it) takes priority, as in transformers.
  // A missing file, no template, or a list without "default" -> Plain (note() says which). Throws InputError
  // naming the file on invalid JSON or a chat_template of the wrong type.
  static std::shared_ptr<ChatTemplate> from_tokenizer_config(const std::string& path);
  // The canonical variant of a family, for models whose repo ships no chat_template (e.g. lmsys/vicuna-*:
  // for_family(Vicuna) renders FastChat's vicuna_v1.1 prompt, default system prompt included). Canonical
  // variants: llama2-chat, llama3.1, mistral-v0.3, chatml, vicuna-v1.1 (+ FastChat system prompt), zephyr, plain.
  static std::shared_ptr<ChatTemplate> for_family(Family family, const std::string& bos_token,
                                                  const std::string& eos_token);

  Family family() const { return family_; }
  std::string family_name() const;  // "llama2", "llama3", "mistral", "chatml", "vicuna", "zephyr", "plain"
  std::string variant() const;      // e.g. "llama3.1", "mistral-v0.3", "qwen2.5", "plain"
  // True when the template only carried the family's markers, not a published variant's structure.
  bool approximate() const;
  // Whether render() runs the model's own template through the interpreter (else a native renderer).
  bool interpreted() const { return jinja_ != nullptr; }
  // How the model's replies mark their reasoning, read from its own template (Plain for the native renderers).
  ReplyFormat reply_format() const { return reply_format_; }
  // Same text as transformers' apply_chat_template(messages, tokenize=False, add_generation_prompt=...).
  // The text includes the BOS string where the template writes it; encode it with add_special=false then.
  // Throws InputError where the template raises (e.g. roles not alternating, a system message where the
  // template allows none) with the template's own message, where it fails while rendering ("line N: ..."), and
  // on an empty conversation (as transformers does).
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;
  // Whether the caller must encode render()'s text without adding special tokens: true for an interpreted
  // template (transformers encodes apply_chat_template's text with add_special_tokens=False: the template
  // writes BOS where the model wants one) and for native renderers that write BOS.
  bool renders_bos() const;
  // A human-readable note: for Plain, which plain format is used and why; for an approximate() match, what was
  // recognized and that the output may differ. Empty for an exactly recognized published variant.
  std::string note() const { return note_; }

  // Llama-3.1/3.2 print "Today Date: <date_string>". Like the template variable date_string passed to
  // apply_chat_template, this pins it. Unpinned, llama3.1 uses the template's literal default ("26 Jul 2024")
  // and llama3.2 uses strftime_now("%d %b %Y"), i.e. today's local date, exactly as transformers does.
  // Interpreted templates get it as the template variable date_string.
  void set_date_string(const std::string& date);
  std::string date_string() const;  // the value render() would print now (for llama3.1/3.2; "" otherwise)

  // An extra template variable, as a keyword argument to apply_chat_template (e.g. enable_thinking=false for
  // Qwen3). Only interpreted templates see it.
  void set_variable(const std::string& name, const nlohmann::ordered_json& value);
  // Pins the local date and time strftime_now() reads (default: now), so renders are reproducible.
  void set_now(const std::tm& local_time);

  struct Style;  // variant parameters (chat_template.cpp)

 private:
  // Compiles the template for the interpreter; on a syntax error keeps the native renderer and says so.
  void use_own_template(const std::string& jinja_template);
  std::string render_interpreted(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  const std::string* pinned_date() const;  // set_date_string()'s value, if any

  Family family_ = Family::Plain;
  std::string bos_, eos_, note_;
  std::shared_ptr<Style> style_;
  std::shared_ptr<const jinja::Template> jinja_;  // the model's own template; null: native rendering
  std::shared_ptr<jinja::Dict> variables_;        // set_variable()
  std::shared_ptr<std::tm> now_;                  // set_now()
  ReplyFormat reply_format_ = ReplyFormat::Plain;
};

}  // namespace specscope
