// ChatTemplate's interpreted path: the model's own Jinja template, rendered with the variables transformers'
// apply_chat_template passes (messages, tools=None, documents=None, add_generation_prompt, the special tokens,
// and the caller's keyword arguments).
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/jinja/template.h"
#include "engine/util/error.h"

namespace specscope {

void ChatTemplate::use_own_template(const std::string& jinja_template) {
  try {
    jinja_ = std::make_shared<const jinja::Template>(jinja_template);
    reply_format_ = reply_format_of_template(jinja_template);
  } catch (const jinja::SyntaxError& e) {
    const std::string fallback = family_ == Family::Plain ? "the plain format" : "SpecScope's " + variant() + " renderer";
    spdlog::warn("chat template does not parse ({}); using {} instead, so the prompt may differ from transformers'",
                 e.what(), fallback);
    note_ = "the chat template does not parse (" + std::string(e.what()) + "); rendered with " + fallback +
            (note_.empty() ? "" : ". " + note_);
    return;
  }
  // The template itself is what renders now: the native renderers' caveats no longer apply.
  if (family_ == Family::Plain)
    note_ = "rendered with the model's own chat template (its format is not one SpecScope recognizes by family)";
  else if (approximate())
    note_ = "rendered with the model's own chat template (it has " + family_name() +
            " markers but is not a published template SpecScope knows; " + variant() + " is the closest)";
  else
    note_.clear();
}

void ChatTemplate::set_variable(const std::string& name, const nlohmann::ordered_json& value) {
  auto vars = variables_ ? std::make_shared<jinja::Dict>(*variables_) : std::make_shared<jinja::Dict>();
  vars->set(name, jinja::Value::from_json(value));
  variables_ = std::move(vars);
}

void ChatTemplate::set_now(const std::tm& local_time) { now_ = std::make_shared<std::tm>(local_time); }

std::string ChatTemplate::render_interpreted(const std::vector<ChatMessage>& messages,
                                             bool add_generation_prompt) const {
  jinja::List msgs;
  for (const auto& m : messages) {
    jinja::Dict d;
    d.set("role", jinja::Value(m.role));
    d.set("content", jinja::Value(m.content));
    if (!m.reasoning.empty()) {
      d.set("reasoning_content", jinja::Value(m.reasoning));
      d.set("thinking", jinja::Value(m.reasoning));
    }
    msgs.push_back(jinja::Value(std::move(d)));
  }
  jinja::Dict vars;
  vars.set("messages", jinja::Value(std::move(msgs)));
  vars.set("tools", jinja::Value(jinja::None{}));
  vars.set("documents", jinja::Value(jinja::None{}));
  vars.set("add_generation_prompt", jinja::Value(add_generation_prompt));
  // transformers passes the tokenizer's special_tokens_map: a token the tokenizer does not have is not defined.
  if (!bos_.empty()) vars.set("bos_token", jinja::Value(bos_));
  if (!eos_.empty()) vars.set("eos_token", jinja::Value(eos_));
  if (const std::string* date = pinned_date()) vars.set("date_string", jinja::Value(*date));
  if (variables_)
    for (const auto& [k, v] : variables_->items) vars.set(k, v);
  jinja::RenderOptions options;
  if (now_) options.now = *now_;
  try {
    return jinja_->render(vars, options);
  } catch (const jinja::Raised& e) {
    throw InputError("chat template", e.what());  // the template's own refusal, word for word
  } catch (const jinja::Error& e) {  // a refused operation or a limit, "line N: ..."
    throw InputError("chat template", e.what());
  }
}

}  // namespace specscope
