#include "engine/tokenizer/jinja/template.h"

#include "engine/tokenizer/jinja/parser.h"

namespace specscope::jinja {

Template::Template(const std::string& source) : body_(std::make_shared<const Body>(parse(source))) {}

std::string Template::render(const Dict& vars, const RenderOptions& options) const {
  Interpreter in(options);
  return in.render(*body_, vars);
}

}  // namespace specscope::jinja
