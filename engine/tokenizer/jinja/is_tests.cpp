// Jinja2's tests (`x is defined`, `x is string`, `n is divisibleby 3`, ...).
#include <stdexcept>

#include "engine/tokenizer/jinja/builtins.h"
#include "engine/tokenizer/jinja/text.h"

namespace specscope::jinja {

namespace {

const Value& operand(const CallArgs& a, const std::string& test) {
  if (a.pos.empty()) throw std::invalid_argument("test '" + test + "' needs an argument");
  return a.pos[0];
}

bool compare(const std::string& op, const Value& x, const Value& y) {
  if (op == "<") return less_than(x, y);
  if (op == ">") return less_than(y, x);
  if (op == "<=") return !less_than(y, x);
  return !less_than(x, y);
}

}  // namespace

bool apply_test(Interpreter&, const std::string& name, const Value& v, const CallArgs& a) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string();
  if (name == "callable") return v.is_callable();
  if (name == "lower") return v.is_string() && text::lower(v.str()) == v.str();
  if (name == "upper") return v.is_string() && text::upper(v.str()) == v.str();
  if (name == "odd" || name == "even") {
    if (!v.is_int() && !v.is_bool()) throw std::invalid_argument("test '" + name + "' needs an integer");
    const bool odd = (v.as_int() % 2) != 0;
    return name == "odd" ? odd : !odd;
  }
  if (name == "divisibleby") {
    const Value& d = operand(a, name);
    if (!d.is_int() || d.as_int() == 0 || !(v.is_int() || v.is_bool()))
      throw std::invalid_argument("divisibleby needs integers and a non-zero divisor");
    return v.as_int() % d.as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, operand(a, name));
  if (name == "ne" || name == "!=") return !equals(v, operand(a, name));
  if (name == "lt" || name == "lessthan" || name == "<") return compare("<", v, operand(a, name));
  if (name == "gt" || name == "greaterthan" || name == ">") return compare(">", v, operand(a, name));
  if (name == "le" || name == "<=") return compare("<=", v, operand(a, name));
  if (name == "ge" || name == ">=") return compare(">=", v, operand(a, name));
  if (name == "in") {
    const Value& c = operand(a, name);
    if (c.is_string()) return v.is_string() && c.str().find(v.str()) != std::string::npos;
    if (c.is_dict()) return !v.is_list() && !v.is_dict() && !v.is_undefined() && c.dict().find(dict_key(v));
    for (const Value& x : iterate(c))
      if (equals(x, v)) return true;
    return false;
  }
  if (name == "sameas") {
    const Value& o = operand(a, name);
    // Identity: the singletons (None, True, False) and the same shared object.
    if (v.is_none() || o.is_none()) return v.is_none() && o.is_none();
    if (v.is_bool() || o.is_bool()) return v.is_bool() && o.is_bool() && v.as_bool() == o.as_bool();
    return equals(v, o);
  }
  throw std::invalid_argument("no test named '" + name + "'");
}

}  // namespace specscope::jinja
