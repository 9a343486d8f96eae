#pragma once
// The values a chat template computes with, modelled on the Python objects Jinja2 hands a template in
// transformers' sandbox: undefined, None, bool, int, float, str, list (tuples too), dict (insertion-ordered,
// string keys, as JSON gives them), namespace() (the one mutable object) and callables (builtins, bound
// methods, macros). Lists and dicts are shared and never mutated: transformers renders with Jinja's
// ImmutableSandboxedEnvironment, where list.append() and dict.update() are refused too.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace specscope::jinja {

class Value;
class Interpreter;

using List = std::vector<Value>;

// An insertion-ordered string-keyed map (Python dicts keep insertion order; templates print and tojson them).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(const std::string& key) const;
  Value* find(const std::string& key);
  void set(const std::string& key, Value v);
};

// namespace(): attributes that `{% set ns.attr = ... %}` may change from inside loops.
struct Namespace {
  std::shared_ptr<Dict> attrs = std::make_shared<Dict>();
};

// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  const Value* kwarg(const std::string& name) const;
};

struct Callable {
  std::string name;
  std::function<Value(Interpreter&, const CallArgs&)> fn;
};

// A value that is not there. `what` is the message a use that Jinja refuses would raise ("'x' is undefined").
struct Undefined {
  std::string what;
};

struct None {};

class Value {
 public:
  using Data = std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<const List>,
                            std::shared_ptr<const Dict>, std::shared_ptr<Namespace>, std::shared_ptr<const Callable>>;

  Value() : data_(Undefined{}) {}
  Value(None) : data_(None{}) {}
  Value(bool b) : data_(b) {}
  Value(int v) : data_(int64_t(v)) {}
  Value(int64_t v) : data_(v) {}
  Value(double v) : data_(v) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(const char* s) : data_(std::string(s)) {}
  // Lists and dicts know how deeply they nest: printing, comparing, serializing and freeing them recurse, and a
  // template could nest one inside the last a million times. Deeper than kMaxNesting throws std::invalid_argument.
  Value(List l);
  Value(Dict d);
  static constexpr int kMaxNesting = 512;
  Value(std::shared_ptr<Namespace> ns) : data_(std::move(ns)) {}
  Value(Callable c) : data_(std::make_shared<const Callable>(std::move(c))) {}
  static Value undefined(std::string what) { Value v; v.data_ = Undefined{std::move(what)}; return v; }
  // A tuple: a list that prints as (a, b) (what (a, b) literals and dict.items() give).
  static Value tuple(List l) { Value v(std::move(l)); v.tuple_ = true; return v; }
  // Markup: a string marked safe (`| safe`, `| escape`). As with Jinja's markupsafe.Markup, adding a plain string
  // to it HTML-escapes that string (some templates write "text"|safe + value).
  static Value markup(std::string s) { Value v(std::move(s)); v.markup_ = true; return v; }
  static Value from_json(const nlohmann::json& j);
  static Value from_json(const nlohmann::ordered_json& j);  // keeps the object's key order, as Python's json does

  bool is_undefined() const { return std::holds_alternative<Undefined>(data_); }
  bool is_none() const { return std::holds_alternative<None>(data_); }
  bool is_bool() const { return std::holds_alternative<bool>(data_); }
  bool is_int() const { return std::holds_alternative<int64_t>(data_); }  // not bool (Python's bool is an int)
  bool is_float() const { return std::holds_alternative<double>(data_); }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return std::holds_alternative<std::string>(data_); }
  bool is_list() const { return std::holds_alternative<std::shared_ptr<const List>>(data_); }
  bool is_tuple() const { return tuple_ && is_list(); }
  bool is_markup() const { return markup_ && is_string(); }
  bool is_dict() const { return std::holds_alternative<std::shared_ptr<const Dict>>(data_); }
  bool is_namespace() const { return std::holds_alternative<std::shared_ptr<Namespace>>(data_); }
  bool is_callable() const { return std::holds_alternative<std::shared_ptr<const Callable>>(data_); }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const;  // int or bool
  double as_double() const;  // any number
  const std::string& str() const { return std::get<std::string>(data_); }
  const List& list() const { return *std::get<std::shared_ptr<const List>>(data_); }
  const Dict& dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  Namespace& ns() const { return *std::get<std::shared_ptr<Namespace>>(data_); }
  const Callable& callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  const std::string& undefined_what() const { return std::get<Undefined>(data_).what; }

  // Python truthiness (undefined is false).
  bool truthy() const;
  // Python type name, for error messages ("str", "int", "list", "dict", "NoneType", ...).
  std::string type_name() const;

 private:
  Data data_;
  bool tuple_ = false;
  bool markup_ = false;
  int16_t depth_ = 0;  // containers: 1 + the deepest item's depth
};

// Dict keys are strings; the rare non-string key of a dict literal ({0: 1}) is kept as "\0" + a type letter + its
// repr, so lookups, iteration and printing give the original value back. Throws std::invalid_argument for an
// unhashable key (list, dict).
std::string dict_key(const Value& key);
Value key_value(const std::string& key);

// Python str(v) (what {{ v }} prints); undefined prints "".
std::string to_str(const Value& v);
// Python repr(v) (how items print inside a list or dict).
std::string repr(const Value& v);
// Python float repr: "0.5", "2.0", "1e+20", "inf".
std::string float_repr(double d);
// Python ==, with 1 == 1.0 == True and deep list/dict comparison.
bool equals(const Value& a, const Value& b);
// Python <; throws RenderError (via the caller's line) as a std::invalid_argument when the types do not order.
bool less_than(const Value& a, const Value& b);
// json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=sort_keys) with the default separators;
// indent < 0 means None. Throws std::invalid_argument for values JSON cannot hold (undefined, callables).
std::string to_json(const Value& v, int indent = -1, bool sort_keys = false);

}  // namespace specscope::jinja
