#include "engine/tokenizer/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/jinja/text.h"

namespace specscope::jinja {

const Value* Dict::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

Value* Dict::find(const std::string& key) {
  for (auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  if (Value* old = find(key)) *old = std::move(v);
  else items.emplace_back(key, std::move(v));
}

namespace {
int16_t nesting(int deepest) {
  if (deepest + 1 > Value::kMaxNesting)
    throw std::invalid_argument("data nested more than " + std::to_string(Value::kMaxNesting) + " levels deep (limit)");
  return int16_t(deepest + 1);
}
}  // namespace

Value::Value(List l) {
  int deepest = 0;
  for (const auto& v : l) deepest = std::max<int>(deepest, v.depth_);
  depth_ = nesting(deepest);
  data_ = std::make_shared<const List>(std::move(l));
}

Value::Value(Dict d) {
  int deepest = 0;
  for (const auto& kv : d.items) deepest = std::max<int>(deepest, kv.second.depth_);
  depth_ = nesting(deepest);
  data_ = std::make_shared<const Dict>(std::move(d));
}

const Value* CallArgs::kwarg(const std::string& name) const {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

namespace {
template <typename Json>
Value value_from_json(const Json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value(None{});
    case nlohmann::json::value_t::boolean: return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return Value(int64_t(j.template get<uint64_t>()));
    case nlohmann::json::value_t::number_float: return Value(j.template get<double>());
    case nlohmann::json::value_t::string: return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      List l;
      for (const auto& e : j) l.push_back(value_from_json(e));
      return Value(std::move(l));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.set(it.key(), value_from_json(it.value()));
      return Value(std::move(d));
    }
    default: return Value(None{});
  }
}
}  // namespace

Value Value::from_json(const nlohmann::json& j) { return value_from_json(j); }
Value Value::from_json(const nlohmann::ordered_json& j) { return value_from_json(j); }

std::string dict_key(const Value& key) {
  if (key.is_string()) return key.str();
  if (key.is_bool()) return std::string("\0b", 2) + (key.as_bool() ? "1" : "0");
  if (key.is_int()) return std::string("\0i", 2) + std::to_string(key.as_int());
  if (key.is_float()) return std::string("\0f", 2) + float_repr(key.as_double());
  if (key.is_none()) return std::string("\0n", 2);
  throw std::invalid_argument("unhashable type: '" + key.type_name() + "'");
}

Value key_value(const std::string& key) {
  if (key.size() < 2 || key[0] != '\0') return Value(key);
  const std::string body = key.substr(2);
  switch (key[1]) {
    case 'b': return Value(body == "1");
    case 'i': return Value(int64_t(std::stoll(body)));
    case 'f': return Value(std::stod(body));
    case 'n': return Value(None{});
    default: return Value(key);
  }
}

int64_t Value::as_int() const { return is_bool() ? int64_t(as_bool()) : std::get<int64_t>(data_); }

double Value::as_double() const {
  if (is_float()) return std::get<double>(data_);
  return double(as_int());
}

bool Value::truthy() const {
  if (is_undefined() || is_none()) return false;
  if (is_bool()) return as_bool();
  if (is_int()) return as_int() != 0;
  if (is_float()) return as_double() != 0.0;
  if (is_string()) return !str().empty();
  if (is_list()) return !list().empty();
  if (is_dict()) return !dict().items.empty();
  return true;  // namespaces and callables
}

std::string Value::type_name() const {
  if (is_undefined()) return "Undefined";
  if (is_none()) return "NoneType";
  if (is_bool()) return "bool";
  if (is_int()) return "int";
  if (is_float()) return "float";
  if (is_string()) return "str";
  if (is_list()) return "list";
  if (is_dict()) return "dict";
  if (is_namespace()) return "Namespace";
  return "function";
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, laid out the way Python's repr() does: scientific when the decimal exponent is
  // below -4 or at least 16, else positional with at least one digit after the point.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  const bool neg = !mant.empty() && mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(size_t(-exp - 1), '0') + digits;
  } else {
    if (digits.size() <= size_t(exp) + 1) {
      out = digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
    }
  }
  return neg ? "-" + out : out;
}

namespace {

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == q) out += std::string("\\") + char(q);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += char(c);
    }
  }
  return out + char(q);
}

void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, int indent, bool sort_keys, int level) {
  if (out.size() > text::kMaxStringBytes)  // shared sublists can make a small value print enormous
    throw std::invalid_argument("tojson output longer than " + std::to_string(text::kMaxStringBytes) + " bytes (limit)");
  auto newline = [&](int lvl) {
    if (indent < 0) return;
    out += '\n';
    out.append(size_t(indent) * size_t(lvl), ' ');
  };
  const char* item_sep = indent < 0 ? ", " : ",";
  if (v.is_none()) out += "null";
  else if (v.is_bool()) out += v.as_bool() ? "true" : "false";
  else if (v.is_int()) out += std::to_string(v.as_int());
  else if (v.is_float()) {
    const double d = v.as_double();
    out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : float_repr(d);
  } else if (v.is_string()) json_string(out, v.str());
  else if (v.is_list()) {
    const List& l = v.list();
    if (l.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < l.size(); ++i) {
      if (i) out += item_sep;
      newline(level + 1);
      json_value(out, l[i], indent, sort_keys, level + 1);
    }
    newline(level);
    out += ']';
  } else if (v.is_dict() || v.is_namespace()) {
    if (v.is_namespace()) throw std::invalid_argument("Object of type Namespace is not JSON serializable");
    std::vector<const std::pair<std::string, Value>*> items;
    for (const auto& kv : v.dict().items) items.push_back(&kv);
    if (sort_keys) std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
    if (items.empty()) {
      out += "{}";
      return;
    }
    out += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += item_sep;
      newline(level + 1);
      const Value key = key_value(items[i]->first);
      // json.dumps writes non-string keys as strings: 16 -> "16", True -> "true", None -> "null"
      json_string(out, key.is_string() ? key.str()
                       : key.is_none() ? "null"
                       : key.is_bool() ? (key.as_bool() ? "true" : "false")
                                       : to_str(key));
      out += ": ";
      json_value(out, items[i]->second, indent, sort_keys, level + 1);
    }
    newline(level);
    out += '}';
  } else {
    throw std::invalid_argument("Object of type " + v.type_name() + " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, int indent, bool sort_keys) {
  std::string out;
  json_value(out, v, indent, sort_keys, 0);
  return out;
}

namespace {
// The namespaces being printed right now: one met again is a cycle ({% set ns.me = [ns] %}), printed as Python
// prints a dict that contains itself.
thread_local std::vector<const Namespace*> printing;

void check_repr_size(const std::string& out) {
  if (out.size() > text::kMaxStringBytes)
    throw std::invalid_argument("printed value longer than " + std::to_string(text::kMaxStringBytes) + " bytes (limit)");
}

// Appends repr(v) to out. One buffer for the whole value, checked as it grows: shared sublists make a small value
// print enormous ([x, x] doubled 40 times), and building each sublist's text before its parent checked the size
// copied every level's text again (5.7 s to reach the limit; one buffer takes as long as tojson, 0.9 s).
void repr_into(std::string& out, const Value& v) {
  check_repr_size(out);
  if (v.is_string()) {
    out += repr_string(v.str());
  } else if (v.is_list()) {
    out += v.is_tuple() ? "(" : "[";
    const List& l = v.list();
    for (size_t i = 0; i < l.size(); ++i) {
      if (i) out += ", ";
      repr_into(out, l[i]);
    }
    out += v.is_tuple() ? (l.size() == 1 ? ",)" : ")") : "]";
  } else if (v.is_dict()) {
    out += '{';
    bool first = true;
    for (const auto& [k, e] : v.dict().items) {
      if (!first) out += ", ";
      repr_into(out, key_value(k));
      out += ": ";
      repr_into(out, e);
      first = false;
    }
    out += '}';
  } else if (v.is_namespace()) {
    const Namespace* ns = &v.ns();
    if (std::find(printing.begin(), printing.end(), ns) != printing.end()) {
      out += "<Namespace {...}>";
      return;
    }
    printing.push_back(ns);
    struct Pop {
      ~Pop() { printing.pop_back(); }
    } pop;
    out += "<Namespace ";
    repr_into(out, Value(*ns->attrs));
    out += '>';
  } else {
    out += to_str(v);
  }
}
}  // namespace

std::string repr(const Value& v) {
  std::string out;
  repr_into(out, v);
  check_repr_size(out);
  return out;
}

std::string to_str(const Value& v) {
  if (v.is_undefined()) return "";
  if (v.is_none()) return "None";
  if (v.is_bool()) return v.as_bool() ? "True" : "False";
  if (v.is_int()) return std::to_string(v.as_int());
  if (v.is_float()) return float_repr(v.as_double());
  if (v.is_string()) return v.str();
  if (v.is_list() || v.is_dict()) return repr(v);
  if (v.is_namespace()) return repr(v);
  return "<function " + v.callable().name + ">";
}

namespace {
// Comparisons walk both values; shared sublists can make that exponential, so the walk has a budget.
constexpr int64_t kCompareBudget = 10'000'000;

void spend(int64_t& work) {
  if (++work > kCompareBudget) throw std::invalid_argument("comparison of values too large (limit)");
}

bool equals_impl(const Value& a, const Value& b, int64_t& work) {
  spend(work);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
  if (a.is_none() || b.is_none()) return a.is_none() && b.is_none();
  if (a.is_string() && b.is_string()) return a.str() == b.str();
  if (a.is_list() && b.is_list()) {
    const List &x = a.list(), &y = b.list();
    if (&x == &y) return true;
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!equals_impl(x[i], y[i], work)) return false;
    return true;
  }
  if (a.is_dict() && b.is_dict()) {
    const Dict &x = a.dict(), &y = b.dict();
    if (&x == &y) return true;
    if (x.items.size() != y.items.size()) return false;
    for (const auto& [k, v] : x.items) {
      const Value* o = y.find(k);
      if (!o || !equals_impl(v, *o, work)) return false;
    }
    return true;
  }
  if (a.is_namespace() && b.is_namespace()) return &a.ns() == &b.ns();
  if (a.is_callable() && b.is_callable()) return &a.callable() == &b.callable();
  return false;
}

bool less_impl(const Value& a, const Value& b, int64_t& work) {
  spend(work);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order is code point order
  if (a.is_list() && b.is_list()) {
    const List &x = a.list(), &y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals_impl(x[i], y[i], work)) continue;
      return less_impl(x[i], y[i], work);
    }
    return x.size() < y.size();
  }
  throw std::invalid_argument("'<' not supported between instances of '" + a.type_name() + "' and '" +
                              b.type_name() + "'");
}
}  // namespace

bool equals(const Value& a, const Value& b) {
  int64_t work = 0;
  return equals_impl(a, b, work);
}

bool less_than(const Value& a, const Value& b) {
  int64_t work = 0;
  return less_impl(a, b, work);
}

}  // namespace specscope::jinja
