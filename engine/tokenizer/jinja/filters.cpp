// Jinja2's filters that chat templates use, with Jinja's (and for tojson, transformers') behaviour.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "engine/tokenizer/jinja/builtins.h"
#include "engine/tokenizer/jinja/interpreter.h"
#include "engine/tokenizer/jinja/text.h"
#include "engine/util/markup_escape.h"

namespace specscope::jinja {

namespace {

bool flag(const CallArgs& a, size_t i, const char* name, bool def) {
  const Value* v = arg(a, i, name);
  return v ? v->truthy() : def;
}

std::optional<std::string> opt_string(const CallArgs& a, size_t i, const char* name) {
  const Value* v = arg(a, i, name);
  if (!v || v->is_none() || v->is_undefined()) return std::nullopt;
  return to_str(*v);
}

// Jinja's attribute getter for filters: "a.b.0" looks up item by item; missing gives undefined.
Value lookup_path(const Value& item, const std::string& path) {
  Value cur = item;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (cur.is_dict()) {
      const Value* v = cur.dict().find(part);
      cur = v ? *v : Value::undefined("'dict object' has no attribute '" + part + "'");
    } else if (cur.is_namespace()) {
      const Value* v = cur.ns().attrs->find(part);
      cur = v ? *v : Value::undefined("'Namespace object' has no attribute '" + part + "'");
    } else if (cur.is_list() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      const size_t i = std::strtoul(part.c_str(), nullptr, 10);
      cur = i < cur.list().size() ? cur.list()[i] : Value::undefined("list object has no element " + part);
    } else {
      return Value::undefined("'" + cur.type_name() + " object' has no attribute '" + part + "'");
    }
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return cur;
}

// The key sort/unique/min/max compare by: case-insensitive strings unless asked otherwise.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(text::lower(v.str()));
  return v;
}

CallArgs rest(const CallArgs& a, size_t from) {
  CallArgs r;
  for (size_t i = from; i < a.pos.size(); ++i) r.pos.push_back(a.pos[i]);
  r.kw = a.kw;
  return r;
}

// select/reject/selectattr/rejectattr: keep items whose (attribute's) test result equals `keep`.
Value select(Interpreter& in, const Value& v, const CallArgs& a, bool by_attr, bool keep) {
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    const Value* at = arg(a, 0, nullptr);
    if (!at) misuse("selectattr/rejectattr need an attribute name");
    attr = to_str(*at);
    next = 1;
  }
  const Value* test = arg(a, next, nullptr);
  CallArgs targs;
  if (test) targs.pos.assign(a.pos.begin() + long(next + 1), a.pos.end());
  List out;
  if (!v.truthy()) return Value(std::move(out));  // Jinja: `if seq:` first, so none selects nothing
  for (const Value& item : iterate(v)) {
    const Value subject = by_attr ? lookup_path(item, attr) : item;
    const bool r = test ? apply_test(in, to_str(*test), subject, targs) : subject.truthy();
    if (r == keep) out.push_back(item);
  }
  return Value(std::move(out));
}

Value to_int(const Value& v, const Value& def, int base) {
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return std::isfinite(v.as_double()) ? Value(int64_t(v.as_double())) : def;
  if (v.is_string()) {
    const std::string s = text::strip(v.str(), std::nullopt, true, true);
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(s.c_str(), &end, base);
    if (!s.empty() && end && *end == 0 && errno == 0) return Value(int64_t(x));
    const double d = std::strtod(s.c_str(), &end);  // Jinja then tries int(float(value))
    if (!s.empty() && end && *end == 0 && std::isfinite(d)) return Value(int64_t(d));
  }
  return def;
}

Value to_float(const Value& v, const Value& def) {
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    const std::string s = text::strip(v.str(), std::nullopt, true, true);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == 0) return Value(d);
  }
  return def;
}

std::string indent(const std::string& s, const std::string& pad, bool first, bool blank) {
  std::vector<std::string> lines = text::splitlines(s + "\n");
  if (s.size() + lines.size() * pad.size() > text::kMaxStringBytes)
    misuse("indent would make a string of more than " + std::to_string(text::kMaxStringBytes) + " bytes (limit)");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    const bool pad_it = i == 0 ? first : (blank || !lines[i].empty());
    out += (pad_it ? pad : "") + lines[i];
  }
  return out;
}

}  // namespace

List iterate(const Value& v) {
  if (v.is_list()) return v.list();
  if (v.is_undefined()) return {};
  if (v.is_dict()) {
    List keys;
    for (const auto& kv : v.dict().items) keys.push_back(key_value(kv.first));
    return keys;
  }
  if (v.is_string()) {
    const std::u32string u = text::decode(v.str());
    if (u.size() > text::kMaxItems)
      misuse("a string of more than " + std::to_string(text::kMaxItems) + " characters is too long to iterate (limit)");
    List chars;
    for (char32_t c : u) chars.push_back(Value(text::encode(std::u32string(1, c))));
    return chars;
  }
  misuse("'" + v.type_name() + "' object is not iterable");
}

Value apply_filter(Interpreter& in, const std::string& name, const Value& v, const CallArgs& a) {
  if (name == "trim") return Value(text::strip(to_str(v), opt_string(a, 0, "chars"), true, true));
  if (name == "length" || name == "count") {
    if (v.is_string()) return Value(int64_t(text::length(v.str())));
    if (v.is_list()) return Value(int64_t(v.list().size()));
    if (v.is_dict()) return Value(int64_t(v.dict().items.size()));
    if (v.is_undefined()) return Value(int64_t(0));
    misuse("object of type '" + v.type_name() + "' has no len()");
  }
  if (name == "upper") return Value(text::upper(to_str(v)));
  if (name == "lower") return Value(text::lower(to_str(v)));
  if (name == "capitalize") return Value(text::capitalize(to_str(v)));
  if (name == "title") return Value(text::jinja_title(to_str(v)));
  if (name == "replace") {
    const Value* from = arg(a, 0, "old");
    const Value* to = arg(a, 1, "new");
    const Value* count = arg(a, 2, "count");
    if (!from || !to) misuse("replace needs the old and the new text");
    return Value(text::replace(to_str(v), to_str(*from), to_str(*to),
                               count && !count->is_none() ? count->as_int() : -1));
  }
  if (name == "default" || name == "d") {
    const Value* def = arg(a, 0, "default_value");
    const bool boolean = flag(a, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy())) return def ? *def : Value("");
    return v;
  }
  if (name == "join") {
    const std::string sep = opt_string(a, 0, "d").value_or("");
    const auto attr = opt_string(a, 1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(v)) {
      out += (first ? "" : sep) + to_str(attr ? lookup_path(item, *attr) : item);
      first = false;
      in.check_size(out.size());
    }
    return Value(std::move(out));
  }
  if (name == "first" || name == "last") {
    List items = iterate(v);
    if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value(iterate(v));
  if (name == "tojson") {
    const Value* ascii = arg(a, 0, "ensure_ascii");
    if (ascii && ascii->truthy()) misuse("tojson(ensure_ascii=True) is not supported");
    const Value* ind = arg(a, 1, "indent");
    if (arg(a, 2, "separators") && !arg(a, 2, "separators")->is_none()) misuse("tojson(separators=...) is not supported");
    const bool sort_keys = flag(a, 3, "sort_keys", false);
    int width = -1;
    if (ind && !ind->is_none()) {
      if (!ind->is_int()) misuse("tojson indent must be an integer");
      width = int(std::clamp<int64_t>(ind->as_int(), 0, 64));
    }
    return Value(to_json(v, width, sort_keys));
  }
  if (name == "string") return Value(to_str(v));
  if (name == "int") {
    const Value* def = arg(a, 0, "default");
    const Value* base = arg(a, 1, "base");
    return to_int(v, def ? *def : Value(int64_t(0)), base ? int(base->as_int()) : 10);
  }
  if (name == "float") {
    const Value* def = arg(a, 0, "default");
    return to_float(v, def ? *def : Value(0.0));
  }
  if (name == "items") {
    if (v.is_undefined()) return Value(List{});
    if (!v.is_dict()) misuse("Can only get item pairs from a mapping.");
    List out;
    for (const auto& [k, e] : v.dict().items) out.push_back(Value::tuple(List{key_value(k), e}));
    return Value(std::move(out));
  }
  if (name == "dictsort") {
    if (!v.is_dict()) misuse("dictsort needs a mapping");
    const bool cs = flag(a, 0, "case_sensitive", false);
    const bool by_value = opt_string(a, 1, "by").value_or("key") == "value";
    const bool reverse = flag(a, 2, "reverse", false);
    List out;
    for (const auto& [k, e] : v.dict().items) out.push_back(Value::tuple(List{key_value(k), e}));
    std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) {
      const size_t i = by_value ? 1 : 0;
      return less_than(sort_key(x.list()[i], cs), sort_key(y.list()[i], cs));
    });
    if (reverse) std::reverse(out.begin(), out.end());
    return Value(std::move(out));
  }
  if (name == "selectattr") return select(in, v, a, true, true);
  if (name == "rejectattr") return select(in, v, a, true, false);
  if (name == "select") return select(in, v, a, false, true);
  if (name == "reject") return select(in, v, a, false, false);
  if (name == "map") {
    List out;
    if (!v.truthy()) return Value(std::move(out));  // Jinja: `if value:` first
    if (const Value* attr = a.kwarg("attribute")) {
      const Value* def = a.kwarg("default");
      for (const Value& item : iterate(v)) {
        Value x = lookup_path(item, to_str(*attr));
        out.push_back(x.is_undefined() && def ? *def : x);
      }
    } else {
      const Value* f = arg(a, 0, nullptr);
      if (!f) misuse("map needs a filter name or attribute=");
      const CallArgs fargs = rest(a, 1);
      for (const Value& item : iterate(v)) out.push_back(apply_filter(in, to_str(*f), item, fargs));
    }
    return Value(std::move(out));
  }
  if (name == "safe") return v.is_markup() ? v : Value::markup(to_str(v));
  if (name == "e" || name == "escape" || name == "forceescape")
    return v.is_markup() && name != "forceescape" ? v : Value::markup(markup_escape(to_str(v)));
  if (name == "indent") {
    const Value* w = arg(a, 0, "width");
    std::string pad = "    ";
    if (w && w->is_string()) pad = w->str();
    else if (w) pad = std::string(size_t(std::clamp<int64_t>(w->as_int(), 0, 1024)), ' ');
    return Value(indent(to_str(v), pad, flag(a, 1, "first", false), flag(a, 2, "blank", false)));
  }
  if (name == "abs") {
    if (v.is_float()) return Value(std::fabs(v.as_double()));
    if (v.is_int() || v.is_bool()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    misuse("bad operand type for abs(): '" + v.type_name() + "'");
  }
  if (name == "round") {
    const Value* p = arg(a, 0, "precision");
    const std::string method = opt_string(a, 1, "method").value_or("common");
    const double scale = std::pow(10.0, double(p ? p->as_int() : 0));
    const double x = v.as_double() * scale;
    const double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
    return Value(r / scale);
  }
  if (name == "sort" || name == "unique" || name == "min" || name == "max") {
    const bool reverse = name == "sort" && flag(a, 0, "reverse", false);
    const bool cs = flag(a, name == "sort" ? 1 : 0, "case_sensitive", false);
    const auto attr = opt_string(a, name == "sort" ? 2 : 1, "attribute");
    auto key = [&](const Value& x) { return sort_key(attr ? lookup_path(x, *attr) : x, cs); };
    List items = iterate(v);
    if (name == "unique") {
      List out;
      for (const Value& x : items) {
        bool seen = false;
        for (const Value& y : out) seen = seen || equals(key(x), key(y));
        if (!seen) out.push_back(x);
      }
      return Value(std::move(out));
    }
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
      return reverse ? less_than(key(y), key(x)) : less_than(key(x), key(y));
    });
    if (name == "sort") return Value(std::move(items));
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    return name == "min" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::u32string u = text::decode(v.str());
      std::reverse(u.begin(), u.end());
      return Value(text::encode(u));
    }
    List items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "sum") {
    const auto attr = opt_string(a, 0, "attribute");
    const Value* start = arg(a, 1, "start");
    Value total = start ? *start : Value(int64_t(0));
    for (const Value& x : iterate(v)) {
      const Value y = attr ? lookup_path(x, *attr) : x;
      if (!total.is_number() || !y.is_number()) misuse("unsupported operand type(s) for +");
      total = total.is_float() || y.is_float() ? Value(total.as_double() + y.as_double())
                                               : Value(total.as_int() + y.as_int());
    }
    return total;
  }
  if (name == "attr") {
    const Value* n = arg(a, 0, "name");
    if (!n) misuse("attr needs a name");
    return lookup_path(v, to_str(*n));
  }
  if (name == "wordcount") return Value(int64_t(text::split(to_str(v), std::nullopt, -1).size()));
  misuse("no filter named '" + name + "'");
}

}  // namespace specscope::jinja
