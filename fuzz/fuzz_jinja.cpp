// libFuzzer target: the Jinja interpreter (engine/tokenizer/jinja/) on arbitrary templates. Chat templates come
// from model files anyone could have written (tokenizer_config.json, chat_template.jinja, GGUF metadata), so
// whatever the bytes, parsing and rendering end in a template or a jinja::Error (syntax, raise_exception, a
// refused operation, a limit), never a crash, a hang or unbounded memory: the limits are set small here so that
// a loop or a growing string is cut off fast.
// Seeds: fuzz/corpus/jinja (the published templates of tests/fixtures/chat_templates/published and a few
// family templates).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/tokenizer/jinja/template.h"

using namespace specscope::jinja;

namespace {

Dict context() {
  List messages;
  for (const auto& [role, content] : {std::pair<const char*, const char*>{"system", "Be brief."},
                                      {"user", "Hello"}, {"assistant", "Hi <think>x</think> there"},
                                      {"tool", "{\"t\": 1}"}, {"user", "Bye"}}) {
    Dict m;
    m.set("role", Value(role));
    m.set("content", Value(content));
    messages.push_back(Value(std::move(m)));
  }
  Dict vars;
  vars.set("messages", Value(std::move(messages)));
  vars.set("add_generation_prompt", Value(true));
  vars.set("bos_token", Value("<s>"));
  vars.set("eos_token", Value("</s>"));
  vars.set("tools", Value(None{}));
  vars.set("documents", Value(None{}));
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Dict vars = context();
  const std::string text(reinterpret_cast<const char*>(data), size);
  RenderOptions opt;
  opt.limits.max_output_bytes = 1 << 16;
  opt.limits.max_loop_iterations = 20000;
  opt.limits.max_call_depth = 16;
  std::tm now{};
  now.tm_year = 125;
  now.tm_mday = 1;
  opt.now = now;
  try {
    const Template t(text);
    const std::string out = t.render(vars, opt);
    if (out.size() > opt.limits.max_output_bytes) std::abort();  // the output limit held
  } catch (const Error&) {
  }
  return 0;
}
