#pragma once
// The parsed template: expressions and statements, as the parser builds them and the interpreter walks them.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizer/jinja/value.h"

namespace specscope::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,   // value
    Name,      // name
    ListLit,   // args
    TupleLit,  // args
    DictLit,   // kwargs-like pairs in `pairs`
    Attr,      // a.name
    Item,      // a[b]
    Slice,     // a[b:c:d] (b, c, d may be null)
    Call,      // a(args, kwargs)
    Filter,    // a | name(args, kwargs)
    Test,      // a is [not] name(args)
    Unary,     // op a: "-", "+", "not"
    Binary,    // a op b: + - * / // % ** ~ == != < <= > >= in "not in"
    And,
    Or,
    Cond,      // a if b else c (c may be null)
  };
  Kind kind;
  int line = 0;
  Value literal;
  std::string name;  // Name, Attr, Filter, Test; the operator for Unary/Binary
  ExprPtr a, b, c, d;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::pair<ExprPtr, ExprPtr>> pairs;  // DictLit
  bool negated = false;                             // Test: `is not`
  int height = 1;                                   // levels below and including this node (bounded by the parser)
};

struct Node;
using Body = std::vector<std::unique_ptr<Node>>;

// An assignment target: a name, `ns.attr`, or a tuple of names.
struct Target {
  std::vector<std::string> names;  // one name, or several for tuple unpacking
  std::string attr;                // non-empty: names[0].attr
  bool tuple = false;
};

struct Node {
  enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, Break, Continue, FilterBlock, Body };
  Kind kind;
  int line = 0;
  std::string text;                                  // Text; the macro name
  ExprPtr expr;                                      // Output, Set value, For iterable, FilterBlock filter
  ExprPtr cond;                                      // For's `if` filter
  std::vector<std::pair<ExprPtr, Body>> branches;    // If / elif
  Body body, else_body;                              // For, SetBlock, Macro, If's else, FilterBlock, Body
  Target target;                                     // For, Set, SetBlock
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro parameters with defaults (null: none)
};

}  // namespace specscope::jinja
