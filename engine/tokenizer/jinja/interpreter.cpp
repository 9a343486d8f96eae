#include "engine/tokenizer/jinja/interpreter.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "engine/tokenizer/jinja/builtins.h"
#include "engine/tokenizer/jinja/errors.h"
#include "engine/tokenizer/jinja/text.h"
#include "engine/util/markup_escape.h"

namespace specscope::jinja {

namespace {

[[noreturn]] void undefined_used(const Value& v, int line) { throw RenderError(line, v.undefined_what()); }

std::string object_name(const Value& v) { return "'" + v.type_name() + " object'"; }

template <typename Op>
int64_t checked(Op op, int64_t x, int64_t y, int line) {
  int64_t r = 0;
  if (op(x, y, &r)) throw RenderError(line, "integer overflow");
  return r;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b, int line) {
  if (a.is_undefined()) undefined_used(a, line);
  if (b.is_undefined()) undefined_used(b, line);
  const bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
  if (a.is_number() && b.is_number()) {
    if (op == "/") {
      if (b.as_double() == 0) throw RenderError(line, "division by zero");
      return Value(a.as_double() / b.as_double());
    }
    if (ints) {
      const int64_t x = a.as_int(), y = b.as_int();
      auto add = [](int64_t p, int64_t q, int64_t* r) { return __builtin_add_overflow(p, q, r); };
      auto sub = [](int64_t p, int64_t q, int64_t* r) { return __builtin_sub_overflow(p, q, r); };
      auto mul = [](int64_t p, int64_t q, int64_t* r) { return __builtin_mul_overflow(p, q, r); };
      if (op == "+") return Value(checked(add, x, y, line));
      if (op == "-") return Value(checked(sub, x, y, line));
      if (op == "*") return Value(checked(mul, x, y, line));
      if (op == "//" || op == "%") {
        if (y == 0) throw RenderError(line, "integer division or modulo by zero");
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors
          --q;
          m += y;
        }
        return Value(op == "//" ? q : m);
      }
      if (op == "**") {
        if (y < 0) return Value(std::pow(double(x), double(y)));
        int64_t result = 1, base = x, e = y;  // by squaring: 64 steps at most, whatever the exponent
        while (e > 0) {
          if ((e & 1) && __builtin_mul_overflow(result, base, &result)) throw RenderError(line, "integer overflow");
          e >>= 1;
          if (e > 0 && __builtin_mul_overflow(base, base, &base)) throw RenderError(line, "integer overflow");
        }
        return Value(result);
      }
    } else {
      const double x = a.as_double(), y = b.as_double();
      if (op == "+") return Value(x + y);
      if (op == "-") return Value(x - y);
      if (op == "*") return Value(x * y);
      if (op == "**") return Value(std::pow(x, y));
      if (y == 0) throw RenderError(line, "float division by zero");
      if (op == "//") return Value(std::floor(x / y));
      if (op == "%") {
        double m = std::fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return Value(m);
      }
    }
  }
  if (op == "+" && a.is_string() && b.is_string()) {
    if (a.is_markup() || b.is_markup())  // Markup + str escapes the plain side, as markupsafe does
      return Value::markup((a.is_markup() ? a.str() : markup_escape(a.str())) +
                           (b.is_markup() ? b.str() : markup_escape(b.str())));
    return Value(a.str() + b.str());
  }
  if (op == "+" && a.is_list() && b.is_list()) {
    List l = a.list();
    l.insert(l.end(), b.list().begin(), b.list().end());
    return Value(std::move(l));
  }
  if (op == "*" && ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool()))) {
    const int64_t n = b.as_int();
    const size_t unit = a.is_string() ? a.str().size() : a.list().size();
    const size_t cap = a.is_string() ? text::kMaxStringBytes : text::kMaxItems;
    if (n > 0 && unit > 0 && size_t(n) > cap / unit)
      throw RenderError(line, std::string(a.is_string() ? "string" : "list") + " repetition too long (limit)");
    const int64_t times = unit == 0 ? 0 : std::max<int64_t>(n, 0);  // '' * 10**18 is '' at once
    if (a.is_string()) {
      std::string s;
      s.reserve(unit * size_t(times));
      for (int64_t k = 0; k < times; ++k) s += a.str();
      return Value(std::move(s));
    }
    List l;
    for (int64_t k = 0; k < times; ++k) l.insert(l.end(), a.list().begin(), a.list().end());
    return Value(std::move(l));
  }
  if (op == "*" && (a.is_int() || a.is_bool()) && (b.is_string() || b.is_list())) return arithmetic(op, b, a, line);
  if (op == "+" && a.is_string())
    throw RenderError(line, "can only concatenate str (not \"" + b.type_name() + "\") to str");
  if (op == "+" && a.is_list())
    throw RenderError(line, "can only concatenate list (not \"" + b.type_name() + "\") to list");
  throw RenderError(line, "unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                              b.type_name() + "'");
}

bool contains(const Value& container, const Value& item, int line) {
  if (container.is_string()) {
    if (!item.is_string())
      throw RenderError(line, "'in <string>' requires string as left operand, not " + item.type_name());
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const auto& e : container.list())
      if (equals(e, item)) return true;
    return false;
  }
  if (container.is_dict()) {
    if (item.is_list() || item.is_dict()) throw RenderError(line, "unhashable type: '" + item.type_name() + "'");
    return container.dict().find(dict_key(item)) != nullptr;
  }
  if (container.is_undefined()) return false;
  throw RenderError(line, "argument of type '" + container.type_name() + "' is not iterable");
}

}  // namespace

const Value* Interpreter::Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

std::string Interpreter::render(const Body& body, const Dict& vars) {
  Scope context;
  for (const auto& [k, v] : vars.items) context.vars[k] = v;
  Scope top;
  top.parent = &context;
  top_ = &top;
  struct ReleaseNamespaces {
    Interpreter& in;
    ~ReleaseNamespaces() {
      for (auto& weak : in.namespaces_)
        if (auto ns = weak.lock()) ns->attrs->items.clear();
      in.namespaces_.clear();
    }
  } release{*this};
  std::string out;
  try {
    if (exec(body, top, out) != Flow::Normal) throw RenderError(line_, "'break' or 'continue' outside a loop");
  } catch (const std::invalid_argument& e) {  // a builtin's complaint that no call site wrapped
    top_ = nullptr;
    throw RenderError(line_, e.what());
  }
  top_ = nullptr;
  return out;
}

void Interpreter::count_iterations(int64_t n) {
  iterations_ += n;
  if (iterations_ > opt_.limits.max_loop_iterations)
    throw RenderError(line_, "the template loops more than " + std::to_string(opt_.limits.max_loop_iterations) +
                                 " times (limit)");
}

void Interpreter::check_size(size_t bytes) const {
  if (bytes > opt_.limits.max_output_bytes)
    throw RenderError(line_, "the template's output exceeds " + std::to_string(opt_.limits.max_output_bytes) +
                                 " bytes (limit)");
}

void Interpreter::append(std::string& out, const std::string& s, int line) const {
  if (out.size() + s.size() > opt_.limits.max_output_bytes)
    throw RenderError(line, "the template's output exceeds " + std::to_string(opt_.limits.max_output_bytes) +
                                " bytes (limit)");
  out += s;
}

Interpreter::Flow Interpreter::exec(const Body& body, Scope& scope, std::string& out) {
  for (const auto& n : body) {
    const Flow f = exec_node(*n, scope, out);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_node(const Node& n, Scope& scope, std::string& out) {
  line_ = n.line;
  switch (n.kind) {
    case Node::Kind::Text:
      append(out, n.text, n.line);
      return Flow::Normal;
    case Node::Kind::Output:
      append(out, to_str(eval(*n.expr, scope)), n.line);
      return Flow::Normal;
    case Node::Kind::If:
      for (const auto& [cond, body] : n.branches)
        if (eval(*cond, scope).truthy()) return exec(body, scope, out);
      return exec(n.else_body, scope, out);
    case Node::Kind::For:
      return exec_for(n, scope, out);
    case Node::Kind::Set:
      assign(n.target, eval(*n.expr, scope), scope, n.line);
      return Flow::Normal;
    case Node::Kind::SetBlock: {
      std::string captured;
      Scope inner;
      inner.parent = &scope;
      if (exec(n.body, inner, captured) != Flow::Normal) throw RenderError(n.line, "'break' outside a loop");
      assign(n.target, Value(std::move(captured)), scope, n.line);
      return Flow::Normal;
    }
    case Node::Kind::Macro:
      define_macro(n, scope);
      return Flow::Normal;
    case Node::Kind::Break:
      return Flow::Break;
    case Node::Kind::Continue:
      return Flow::Continue;
    case Node::Kind::FilterBlock: {
      std::string captured;
      const Flow f = exec(n.body, scope, captured);
      Scope inner;
      inner.parent = &scope;
      inner.vars[" body"] = Value(std::move(captured));
      append(out, to_str(eval(*n.expr, inner)), n.line);
      return f;
    }
    case Node::Kind::Body:
      return exec(n.body, scope, out);
  }
  return Flow::Normal;
}

void Interpreter::assign(const Target& t, const Value& v, Scope& scope, int line) {
  if (!t.attr.empty()) {
    const Value* ns = scope.find(t.names[0]);
    if (!ns || !ns->is_namespace()) throw RenderError(line, "cannot assign attribute on non-namespace object");
    if (!t.attr.empty() && t.attr[0] == '_')
      throw RenderError(line, "Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" +
                                  t.attr + "'. Please rename the attribute.");
    ns->ns().attrs->set(t.attr, v);
    return;
  }
  if (!t.tuple) {
    scope.vars[t.names[0]] = v;
    return;
  }
  const List items = iterate(v);
  if (items.size() != t.names.size())
    throw RenderError(line, items.size() > t.names.size()
                                ? "too many values to unpack (expected " + std::to_string(t.names.size()) + ")"
                                : "not enough values to unpack (expected " + std::to_string(t.names.size()) +
                                      ", got " + std::to_string(items.size()) + ")");
  for (size_t i = 0; i < items.size(); ++i) scope.vars[t.names[i]] = items[i];
}

Interpreter::Flow Interpreter::exec_for(const Node& n, Scope& scope, std::string& out) {
  const Value seq = eval(*n.expr, scope);
  if (seq.is_none() || seq.is_bool() || seq.is_int() || seq.is_float() || seq.is_callable() || seq.is_namespace())
    throw RenderError(n.line, "'" + seq.type_name() + "' object is not iterable");
  List items = iterate(seq);
  count_iterations(int64_t(items.size()));
  if (n.cond) {  // `for x in xs if cond`: filtered before loop.index and loop.length are counted
    List kept;
    for (const auto& item : items) {
      Scope probe;
      probe.parent = &scope;
      assign(n.target, item, probe, n.line);
      if (eval(*n.cond, probe).truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    Scope inner;
    inner.parent = &scope;
    return exec(n.else_body, inner, out);
  }
  const int64_t len = int64_t(items.size());
  for (int64_t i = 0; i < len; ++i) {
    Scope inner;  // fresh each iteration: Jinja's loop bodies do not carry `set` values to the next one
    inner.parent = &scope;
    assign(n.target, items[size_t(i)], inner, n.line);
    Dict loop;
    loop.set("index0", Value(i));
    loop.set("index", Value(i + 1));
    loop.set("revindex0", Value(len - i - 1));
    loop.set("revindex", Value(len - i));
    loop.set("first", Value(i == 0));
    loop.set("last", Value(i == len - 1));
    loop.set("length", Value(len));
    loop.set("depth", Value(int64_t(1)));
    loop.set("depth0", Value(int64_t(0)));
    loop.set("previtem", i > 0 ? items[size_t(i - 1)] : Value::undefined("'loop.previtem' is undefined"));
    loop.set("nextitem", i + 1 < len ? items[size_t(i + 1)] : Value::undefined("'loop.nextitem' is undefined"));
    loop.set("cycle", Value(Callable{"cycle", [i](Interpreter&, const CallArgs& a) {
                                       if (a.pos.empty()) throw std::invalid_argument("no items for cycling given");
                                       return a.pos[size_t(i) % a.pos.size()];
                                     }}));
    inner.vars["loop"] = Value(std::move(loop));
    const Flow f = exec(n.body, inner, out);
    if (f == Flow::Break) break;
  }
  return Flow::Normal;
}

void Interpreter::define_macro(const Node& n, Scope& scope) {
  const Node* node = &n;
  scope.vars[n.text] = Value(Callable{n.text, [node](Interpreter& in, const CallArgs& args) -> Value {
    if (++in.call_depth_ > in.opt_.limits.max_call_depth) {
      --in.call_depth_;
      throw std::invalid_argument("macro calls nested more than " + std::to_string(in.opt_.limits.max_call_depth) +
                                  " deep (limit)");
    }
    struct Depth {
      Interpreter& in;
      ~Depth() { --in.call_depth_; }
    } depth{in};
    Scope frame;
    frame.parent = in.top_;
    if (args.pos.size() > node->params.size())
      throw std::invalid_argument("macro '" + node->text + "' takes not more than " +
                                  std::to_string(node->params.size()) + " argument(s)");
    for (size_t i = 0; i < node->params.size(); ++i) {
      const auto& [pname, def] = node->params[i];
      if (i < args.pos.size()) frame.vars[pname] = args.pos[i];
      else if (const Value* kw = args.kwarg(pname)) frame.vars[pname] = *kw;
      else if (def) frame.vars[pname] = in.eval(*def, frame);
      else frame.vars[pname] = Value::undefined("'" + pname + "' is undefined");
    }
    for (const auto& [k, v] : args.kw) {
      bool known = false;
      for (const auto& p : node->params) known = known || p.first == k;
      if (!known) throw std::invalid_argument("macro '" + node->text + "' takes no keyword argument '" + k + "'");
    }
    std::string out;
    if (in.exec(node->body, frame, out) != Flow::Normal) throw std::invalid_argument("'break' outside a loop");
    return Value(std::move(out));
  }});
}

CallArgs Interpreter::eval_args(const Expr& e, Scope& scope) {
  CallArgs a;
  for (const auto& x : e.args) a.pos.push_back(eval(*x, scope));
  for (const auto& [k, x] : e.kwargs) a.kw.emplace_back(k, eval(*x, scope));
  return a;
}

Value Interpreter::call(const Value& callee, const CallArgs& args) {
  if (callee.is_undefined()) throw std::invalid_argument(callee.undefined_what());
  if (!callee.is_callable()) throw std::invalid_argument("'" + callee.type_name() + "' object is not callable");
  return callee.callable().fn(*this, args);
}

Value Interpreter::get_attr(const Value& obj, const std::string& name, int line) {
  if (obj.is_undefined()) undefined_used(obj, line);
  // Jinja tries the Python attribute first (a dict's .items, a str's .strip), then the item.
  Value m = bound_method(obj, name);
  if (!m.is_undefined()) return m;
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(name)) return *v;
    return Value::undefined(object_name(obj) + " has no attribute '" + name + "'");
  }
  if (obj.is_namespace()) {
    if (const Value* v = obj.ns().attrs->find(name)) return *v;
  }
  return Value::undefined(object_name(obj) + " has no attribute '" + name + "'");
}

Value Interpreter::get_item(const Value& obj, const Value& key, int line) {
  if (obj.is_undefined()) undefined_used(obj, line);
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      const int64_t n = int64_t(obj.list().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.list()[size_t(i)];
    } else {
      const std::u32string u = text::decode(obj.str());
      const int64_t n = int64_t(u.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(text::encode(u.substr(size_t(i), 1)));
    }
    return Value::undefined(obj.type_name() + " object has no element " + std::to_string(key.as_int()));
  }
  if (obj.is_dict() && !key.is_list() && !key.is_dict() && !key.is_undefined()) {
    if (const Value* v = obj.dict().find(dict_key(key))) return *v;
  }
  if (obj.is_namespace() && key.is_string()) {
    if (const Value* v = obj.ns().attrs->find(key.str())) return *v;
  }
  if (key.is_string()) {  // then the attribute: d['items'] is the method when there is no such key
    Value m = bound_method(obj, key.str());
    if (!m.is_undefined()) return m;
    return Value::undefined(object_name(obj) + " has no attribute '" + key.str() + "'");
  }
  return Value::undefined(object_name(obj) + " has no element " + repr(key));
}

Value Interpreter::slice(const Value& obj, const Value& start, const Value& stop, const Value& step, int line) {
  if (obj.is_undefined()) undefined_used(obj, line);
  auto as_index = [&](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool())
      throw RenderError(line, std::string("slice ") + what + " must be an integer or None");
    return v.as_int();
  };
  const int64_t st = as_index(step, "step").value_or(1);
  if (st == 0) throw RenderError(line, "slice step cannot be zero");
  std::u32string u;
  size_t n = 0;
  if (obj.is_list()) n = obj.list().size();
  else if (obj.is_string()) n = (u = text::decode(obj.str())).size();
  else throw RenderError(line, "'" + obj.type_name() + "' object is not subscriptable");
  const int64_t len = int64_t(n);
  // Python's slice.indices().
  auto clamp = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v;
    if (x < 0) x += len;
    if (st > 0) return std::clamp<int64_t>(x, 0, len);
    return std::clamp<int64_t>(x, -1, len - 1);
  };
  const int64_t b = clamp(as_index(start, "start"), st > 0 ? 0 : len - 1);
  const int64_t e = clamp(as_index(stop, "stop"), st > 0 ? len : -1);
  List l;
  std::u32string s;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) {
    if (obj.is_list()) l.push_back(obj.list()[size_t(i)]);
    else s += u[size_t(i)];
  }
  if (obj.is_list()) return Value(std::move(l));
  return Value(text::encode(s));
}

Value Interpreter::eval_binary(const Expr& e, Scope& scope) {
  const Value a = eval(*e.a, scope);
  const Value b = eval(*e.b, scope);
  const std::string& op = e.name;
  line_ = e.line;
  if (op == "==") return Value(equals(a, b));
  if (op == "!=") return Value(!equals(a, b));
  if (op == "in") return Value(contains(b, a, e.line));
  if (op == "not in") return Value(!contains(b, a, e.line));
  if (op == "~") {
    std::string s = to_str(a) + to_str(b);
    check_size(s.size());
    return Value(std::move(s));
  }
  if (op == "<" || op == "<=" || op == ">" || op == ">=") {
    if (a.is_undefined()) undefined_used(a, e.line);
    if (b.is_undefined()) undefined_used(b, e.line);
    try {
      if (op == "<") return Value(less_than(a, b));
      if (op == ">") return Value(less_than(b, a));
      if (op == "<=") return Value(!less_than(b, a));
      return Value(!less_than(a, b));
    } catch (const std::invalid_argument& x) {
      std::string msg = x.what();
      if (op != "<") msg.replace(1, 1, op);  // the message names the operator as written
      throw RenderError(e.line, msg);
    }
  }
  Value r = arithmetic(op, a, b, e.line);
  if (r.is_string()) check_size(r.str().size());
  return r;
}

Value Interpreter::eval(const Expr& e, Scope& scope) {
  switch (e.kind) {
    case Expr::Kind::Literal:
      return e.literal;
    case Expr::Kind::Name: {
      if (const Value* v = scope.find(e.name)) return *v;
      Value g = global_function(e.name);
      if (!g.is_undefined()) return g;
      return Value::undefined("'" + e.name + "' is undefined");
    }
    case Expr::Kind::ListLit:
    case Expr::Kind::TupleLit: {
      List l;
      for (const auto& x : e.args) l.push_back(eval(*x, scope));
      return e.kind == Expr::Kind::TupleLit ? Value::tuple(std::move(l)) : Value(std::move(l));
    }
    case Expr::Kind::DictLit: {
      Dict d;
      for (const auto& [k, v] : e.pairs) {
        const Value key = eval(*k, scope);
        if (key.is_list() || key.is_dict() || key.is_undefined() || key.is_namespace() || key.is_callable())
          throw RenderError(e.line, "unhashable type: '" + key.type_name() + "'");
        d.set(dict_key(key), eval(*v, scope));
      }
      return Value(std::move(d));
    }
    case Expr::Kind::Attr:
      return get_attr(eval(*e.a, scope), e.name, e.line);
    case Expr::Kind::Item: {
      const Value obj = eval(*e.a, scope);
      return get_item(obj, eval(*e.b, scope), e.line);
    }
    case Expr::Kind::Slice: {
      const Value obj = eval(*e.a, scope);
      const Value b = e.b ? eval(*e.b, scope) : Value(None{});
      const Value c = e.c ? eval(*e.c, scope) : Value(None{});
      const Value d = e.d ? eval(*e.d, scope) : Value(None{});
      return slice(obj, b, c, d, e.line);
    }
    case Expr::Kind::Call: {
      const Value callee = eval(*e.a, scope);
      const CallArgs args = eval_args(e, scope);
      line_ = e.line;
      try {
        return call(callee, args);
      } catch (const std::invalid_argument& x) {
        throw RenderError(e.line, x.what());
      }
    }
    case Expr::Kind::Filter: {
      const Value v = eval(*e.a, scope);
      const CallArgs args = eval_args(e, scope);
      line_ = e.line;
      try {
        Value r = apply_filter(*this, e.name, v, args);
        if (r.is_string()) check_size(r.str().size());
        return r;
      } catch (const std::invalid_argument& x) {
        throw RenderError(e.line, x.what());
      }
    }
    case Expr::Kind::Test: {
      const Value v = eval(*e.a, scope);
      const CallArgs args = eval_args(e, scope);
      line_ = e.line;
      try {
        return Value(apply_test(*this, e.name, v, args) != e.negated);
      } catch (const std::invalid_argument& x) {
        throw RenderError(e.line, x.what());
      }
    }
    case Expr::Kind::Unary: {
      const Value v = eval(*e.a, scope);
      if (e.name == "not") return Value(!v.truthy());
      if (v.is_undefined()) undefined_used(v, e.line);
      if (!v.is_number()) throw RenderError(e.line, "bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
      if (e.name == "+") return v.is_bool() ? Value(v.as_int()) : v;
      if (v.is_float()) return Value(-v.as_double());
      if (v.as_int() == INT64_MIN) throw RenderError(e.line, "integer overflow");
      return Value(-v.as_int());
    }
    case Expr::Kind::Binary:
      return eval_binary(e, scope);
    case Expr::Kind::And: {
      Value a = eval(*e.a, scope);
      return a.truthy() ? eval(*e.b, scope) : a;
    }
    case Expr::Kind::Or: {
      Value a = eval(*e.a, scope);
      return a.truthy() ? a : eval(*e.b, scope);
    }
    case Expr::Kind::Cond:
      if (eval(*e.b, scope).truthy()) return eval(*e.a, scope);
      return e.c ? eval(*e.c, scope)
                 : Value::undefined("the inline if-expression evaluated to false and no else section was defined");
  }
  return Value();
}

}  // namespace specscope::jinja
