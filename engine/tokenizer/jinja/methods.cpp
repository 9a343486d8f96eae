// Python methods of str, dict and list that templates call (content.strip(), message.get('x'), ...). Methods
// that would change a list or dict are refused, as in transformers' ImmutableSandboxedEnvironment.
#include <cctype>
#include <stdexcept>

#include "engine/tokenizer/jinja/builtins.h"
#include "engine/tokenizer/jinja/text.h"
#include "engine/tokenizer/unicode.h"

namespace specscope::jinja {

namespace {

std::optional<std::string> opt_str(const CallArgs& a, size_t i, const char* name) {
  const Value* v = arg(a, i, name);
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) misuse("expected a string argument, got " + v->type_name());
  return v->str();
}

std::string need_str(const CallArgs& a, size_t i, const char* name, const std::string& method) {
  const Value* v = arg(a, i, name);
  if (!v || !v->is_string()) misuse(method + "() needs a string argument");
  return v->str();
}

int64_t opt_int(const CallArgs& a, size_t i, const char* name, int64_t def) {
  const Value* v = arg(a, i, name);
  if (!v || v->is_none()) return def;
  if (!v->is_int() && !v->is_bool()) misuse("expected an integer argument, got " + v->type_name());
  return v->as_int();
}

Value strings(const std::vector<std::string>& parts) {
  List l;
  for (const auto& p : parts) l.push_back(Value(p));
  return Value(std::move(l));
}

// startswith/endswith take a string or a tuple of strings.
bool affix(const std::string& s, const Value& what, bool prefix) {
  auto one = [&](const std::string& p) {
    if (p.size() > s.size()) return false;
    return prefix ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (what.is_string()) return one(what.str());
  if (what.is_list()) {
    for (const Value& p : what.list()) {
      if (!p.is_string()) misuse("tuple for startswith/endswith must only contain str");
      if (one(p.str())) return true;
    }
    return false;
  }
  misuse("startswith/endswith first arg must be str or a tuple of str, not " + what.type_name());
}

// str.format with {}, {0} and {name} fields (no format specs).
std::string format(const std::string& f, const CallArgs& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      const size_t close = f.find('}', i);
      if (close == std::string::npos) misuse("Single '{' encountered in format string");
      const std::string field = f.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!") != std::string::npos) misuse("format specs are not supported in str.format");
      const Value* v = nullptr;
      if (field.empty()) v = auto_index < a.pos.size() ? &a.pos[auto_index++] : nullptr;
      else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
        size_t k = 0;
        for (char d : field) {
          if (!std::isdigit(static_cast<unsigned char>(d)) || k > a.pos.size()) {
            k = a.pos.size();  // not an index any argument has
            break;
          }
          k = k * 10 + size_t(d - '0');
        }
        v = k < a.pos.size() ? &a.pos[k] : nullptr;
      } else {
        v = a.kwarg(field);
      }
      if (!v) misuse("Replacement index " + field + " out of range for positional args tuple");
      out += to_str(*v);
      if (out.size() > text::kMaxStringBytes) misuse("format() would make a string too long (limit)");
      i = close;
    } else if (c == '}') {
      misuse("Single '}' encountered in format string");
    } else {
      out += c;
    }
  }
  return out;
}

template <typename Pred>
bool all_chars(const std::string& s, Pred p) {
  const std::u32string u = text::decode(s);
  if (u.empty()) return false;
  for (char32_t c : u)
    if (!p(c)) return false;
  return true;
}

Value string_method(const std::string& s, const std::string& name, const CallArgs& a) {
  if (name == "strip") return Value(text::strip(s, opt_str(a, 0, "chars"), true, true));
  if (name == "lstrip") return Value(text::strip(s, opt_str(a, 0, "chars"), true, false));
  if (name == "rstrip") return Value(text::strip(s, opt_str(a, 0, "chars"), false, true));
  if (name == "split" || name == "rsplit") {
    const auto sep = opt_str(a, 0, "sep");
    if (sep && sep->empty()) misuse("empty separator");
    const int64_t maxsplit = opt_int(a, 1, "maxsplit", -1);
    return strings(name == "split" ? text::split(s, sep, maxsplit) : text::rsplit(s, sep, maxsplit));
  }
  if (name == "splitlines") return strings(text::splitlines(s));
  if (name == "startswith" || name == "endswith") {
    const Value* what = arg(a, 0, nullptr);
    if (!what) misuse(name + "() takes at least 1 argument (0 given)");
    return Value(affix(s, *what, name == "startswith"));
  }
  if (name == "replace")
    return Value(text::replace(s, need_str(a, 0, "old", name), need_str(a, 1, "new", name), opt_int(a, 2, "count", -1)));
  if (name == "upper") return Value(text::upper(s));
  if (name == "lower") return Value(text::lower(s));
  if (name == "title") return Value(text::py_title(s));
  if (name == "capitalize") return Value(text::capitalize(s));
  if (name == "format") return Value(format(s, a));
  if (name == "join") {
    std::string out;
    bool first = true;
    for (const Value& v : iterate(a.pos.empty() ? Value(List{}) : a.pos[0])) {
      if (!v.is_string()) misuse("sequence item: expected str instance, " + v.type_name() + " found");
      out += (first ? "" : s) + v.str();
      if (out.size() > text::kMaxStringBytes) misuse("join() would make a string too long (limit)");
      first = false;
    }
    return Value(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    const std::string sub = need_str(a, 0, "sub", name);
    if (name == "count") {
      if (sub.empty()) return Value(int64_t(text::length(s) + 1));
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value(n);
    }
    const size_t at = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
    if (at == std::string::npos) {
      if (name == "index" || name == "rindex") misuse("substring not found");
      return Value(int64_t(-1));
    }
    return Value(int64_t(text::length(s.substr(0, at))));  // a code point index, as Python counts
  }
  if (name == "isdigit") return Value(all_chars(s, [](char32_t c) { return c >= '0' && c <= '9'; }));
  if (name == "isalpha") return Value(all_chars(s, [](char32_t c) { return unicode::is_letter(c); }));
  if (name == "isalnum")
    return Value(all_chars(s, [](char32_t c) { return unicode::is_letter(c) || unicode::is_number(c); }));
  if (name == "isspace") return Value(all_chars(s, [](char32_t c) { return text::py_isspace(c); }));
  if (name == "islower") return Value(text::lower(s) == s && text::upper(s) != s);
  if (name == "isupper") return Value(text::upper(s) == s && text::lower(s) != s);
  misuse("'str' object has no attribute '" + name + "'");
}

bool is_string_method(const std::string& n) {
  static const char* kNames[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith",
                                 "endswith", "replace", "upper", "lower", "title", "capitalize", "format", "join",
                                 "find", "rfind", "index", "rindex", "count", "isdigit", "isalpha", "isalnum",
                                 "isspace", "islower", "isupper"};
  for (const char* k : kNames)
    if (n == k) return true;
  return false;
}

Value bind(const Value& obj, const std::string& name, Value (*impl)(const Value&, const std::string&, const CallArgs&)) {
  return Value(Callable{name, [obj, name, impl](Interpreter&, const CallArgs& a) { return impl(obj, name, a); }});
}

Value call_string(const Value& obj, const std::string& name, const CallArgs& a) { return string_method(obj.str(), name, a); }

Value call_dict(const Value& obj, const std::string& name, const CallArgs& a) {
  const Dict& d = obj.dict();
  if (name == "items") {
    List out;
    for (const auto& [k, v] : d.items) out.push_back(Value::tuple(List{key_value(k), v}));
    return Value(std::move(out));
  }
  if (name == "keys") {
    List out;
    for (const auto& kv : d.items) out.push_back(key_value(kv.first));
    return Value(std::move(out));
  }
  if (name == "values") {
    List out;
    for (const auto& kv : d.items) out.push_back(kv.second);
    return Value(std::move(out));
  }
  if (name == "get") {
    const Value* key = arg(a, 0, nullptr);
    if (!key) misuse("get expected at least 1 argument, got 0");
    const Value* def = arg(a, 1, nullptr);
    const Value* v = key->is_list() || key->is_dict() || key->is_undefined() ? nullptr : d.find(dict_key(*key));
    return v ? *v : def ? *def : Value(None{});
  }
  misuse("access to attribute '" + name + "' of 'dict' object is unsafe.");
}

Value call_list(const Value& obj, const std::string& name, const CallArgs& a) {
  const List& l = obj.list();
  if (name == "index" || name == "count") {
    const Value* x = arg(a, 0, nullptr);
    if (!x) misuse(name + "() takes exactly one argument");
    int64_t n = 0;
    for (size_t i = 0; i < l.size(); ++i) {
      if (!equals(l[i], *x)) continue;
      if (name == "index") return Value(int64_t(i));
      ++n;
    }
    if (name == "index") misuse(repr(*x) + " is not in list");
    return Value(n);
  }
  misuse("access to attribute '" + name + "' of 'list' object is unsafe.");
}

}  // namespace

Value bound_method(const Value& obj, const std::string& name) {
  if (obj.is_string() && is_string_method(name)) return bind(obj, name, call_string);
  if (obj.is_dict()) {
    static const char* kNames[] = {"items", "keys", "values", "get", "pop", "update", "setdefault", "clear",
                                   "popitem", "copy"};
    for (const char* k : kNames)
      if (name == k) return bind(obj, name, call_dict);
  }
  if (obj.is_list()) {
    static const char* kNames[] = {"index", "count", "append", "extend", "insert", "pop", "remove", "clear", "sort",
                                   "reverse", "copy"};
    for (const char* k : kNames)
      if (name == k) return bind(obj, name, call_list);
  }
  return Value();
}

}  // namespace specscope::jinja
