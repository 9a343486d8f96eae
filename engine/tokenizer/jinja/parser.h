#pragma once
// Builds the statement tree from the tokens, with Jinja2's grammar and operator precedence (filters bind tighter
// than arithmetic, `~` tighter than + and -, `not` looser than comparisons, `a if c else b`). Tags understood:
// if/elif/else, for (with `if` filter, else, loop.*), set (name, ns.attr, tuple, and block form), macro,
// filter blocks, break/continue, and generation (rendered as its body, as transformers does outside
// assistant-mask mode). Anything else is a SyntaxError naming the line.
#include <string>

#include "engine/tokenizer/jinja/ast.h"

namespace specscope::jinja {

// Throws SyntaxError. max_depth bounds the nesting of expressions and blocks (a hostile template could
// otherwise exhaust the stack).
Body parse(const std::string& source, int max_depth = 256);

}  // namespace specscope::jinja
