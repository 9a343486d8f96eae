#pragma once
// Splits a template into tokens the way Jinja2's lexer does with transformers' settings (trim_blocks=True,
// lstrip_blocks=True, keep_trailing_newline=False): text between tags with the whitespace control applied
// (`{%-`/`-%}` strip all whitespace on that side, `{%+` keeps it, a block or comment tag alone on its line loses
// its indentation, the newline after `%}`/`#}` is dropped, one trailing newline of the template is dropped),
// comments removed, and the expression tokens inside `{{ }}` and `{% %}`.
#include <string>
#include <vector>

namespace specscope::jinja {

struct Token {
  enum class Type { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };
  Type type;
  std::string value;  // text, name, operator, string contents (escapes decoded) or number spelling
  int line;
};

// Throws SyntaxError (errors.h) for an unclosed tag, comment or string, or a character no token starts with.
std::vector<Token> tokenize(const std::string& source);

}  // namespace specscope::jinja
