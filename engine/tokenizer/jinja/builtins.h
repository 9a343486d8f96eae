#pragma once
// The names a chat template can call beyond the grammar: Jinja2's filters and tests (the ones real templates
// use), Python's str/dict/list methods, and the globals transformers adds (raise_exception, strftime_now,
// namespace, dict) plus Jinja's range. They report misuse by throwing std::invalid_argument with Python's or
// Jinja's wording; the interpreter adds the line. raise_exception throws Raised.
#include <stdexcept>
#include <string>

#include "engine/tokenizer/jinja/value.h"

namespace specscope::jinja {

class Interpreter;

// Throws std::invalid_argument("no filter named 'x'") for an unknown filter.
Value apply_filter(Interpreter& in, const std::string& name, const Value& v, const CallArgs& args);
// Throws std::invalid_argument("no test named 'x'") for an unknown test.
bool apply_test(Interpreter& in, const std::string& name, const Value& v, const CallArgs& args);
// A method of a str, dict or list bound to `obj` (x.strip, d.items, ...); undefined when there is none.
Value bound_method(const Value& obj, const std::string& name);
// A global function by name; undefined when there is none.
Value global_function(const std::string& name);
// How a builtin reports its misuse (the wording is Python's or Jinja's; the interpreter adds the line).
[[noreturn]] inline void misuse(const std::string& what) { throw std::invalid_argument(what); }
// Argument `i` of a call, given by position or by keyword `name`; null when not given.
inline const Value* arg(const CallArgs& a, size_t i, const char* name) {
  if (i < a.pos.size()) return &a.pos[i];
  return name ? a.kwarg(name) : nullptr;
}

// The items a for loop visits: a list's elements, a dict's keys, a string's characters; undefined: none.
List iterate(const Value& v);

}  // namespace specscope::jinja
