#pragma once
// A Jinja2 template, the subset Hugging Face chat templates use, interpreted the way transformers'
// apply_chat_template renders it (jinja2 with trim_blocks and lstrip_blocks, loop controls, raise_exception,
// strftime_now, namespace, and a tojson that is json.dumps(ensure_ascii=False)). Parsed once, rendered many times.
//
// Supported: {{ }}, {% %}, {# #} with `-`/`+` whitespace control; if/elif/else; for (tuple targets, `if`
// filter, else, loop.index/index0/revindex/first/last/length/previtem/nextitem/cycle, break/continue); set (names,
// ns.attr, tuples, block form); macros; filter blocks; {% generation %}; literals (str, int, float, bool, none,
// list, tuple, dict); attribute, subscript and slice access; arithmetic, comparisons, in/not in, and/or/not, ~,
// `a if c else b`; the filters, tests, str/dict/list methods and globals in builtins.h. Not supported: extends,
// include, import, call blocks, recursive loops, *args/**kwargs.
#include <memory>
#include <string>

#include "engine/tokenizer/jinja/ast.h"
#include "engine/tokenizer/jinja/errors.h"
#include "engine/tokenizer/jinja/interpreter.h"
#include "engine/tokenizer/jinja/value.h"

namespace specscope::jinja {

class Template {
 public:
  // Throws SyntaxError naming the line.
  explicit Template(const std::string& source);
  // Throws Raised (the template's raise_exception message) or RenderError.
  std::string render(const Dict& vars, const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace specscope::jinja
