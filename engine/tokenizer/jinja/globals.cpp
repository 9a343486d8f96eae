// The global functions a chat template may call: transformers' raise_exception, strftime_now, namespace and
// dict, and Jinja's range.
#include <ctime>
#include <iomanip>
#include <locale>
#include <sstream>
#include <stdexcept>

#include "engine/tokenizer/jinja/builtins.h"
#include "engine/tokenizer/jinja/errors.h"
#include "engine/tokenizer/jinja/interpreter.h"

namespace specscope::jinja {

namespace {

Value raise_exception(Interpreter&, const CallArgs& a) {
  throw Raised(a.pos.empty() ? std::string() : to_str(a.pos[0]));
}

// datetime.now().strftime(fmt): local time, C locale (Python does not apply the user's LC_TIME).
Value strftime_now(Interpreter& in, const CallArgs& a) {
  if (a.pos.empty() || !a.pos[0].is_string()) misuse("strftime_now() needs a format string");
  std::tm tm{};
  if (in.options().now) {
    tm = *in.options().now;
  } else {
    const std::time_t t = std::time(nullptr);
    localtime_r(&t, &tm);
  }
  std::ostringstream os;
  os.imbue(std::locale::classic());
  os << std::put_time(&tm, a.pos[0].str().c_str());
  return Value(os.str());
}

Value make_namespace(Interpreter& in, const CallArgs& a) {
  auto ns = std::make_shared<Namespace>();
  in.track(ns);
  for (const Value& p : a.pos) {  // namespace(mapping) copies it
    if (!p.is_dict()) misuse("namespace() takes a mapping or keyword arguments");
    for (const auto& [k, v] : p.dict().items) ns->attrs->set(k, v);
  }
  for (const auto& [k, v] : a.kw) {
    if (!k.empty() && k[0] == '_')
      misuse("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" + k +
          "'. Please rename the attribute.");
    ns->attrs->set(k, v);
  }
  return Value(ns);
}

Value make_dict(Interpreter&, const CallArgs& a) {
  Dict d;
  for (const Value& p : a.pos) {
    if (!p.is_dict()) misuse("dict() takes a mapping or keyword arguments");
    for (const auto& [k, v] : p.dict().items) d.set(k, v);
  }
  for (const auto& [k, v] : a.kw) d.set(k, v);
  return Value(std::move(d));
}

Value range(Interpreter& in, const CallArgs& a) {
  int64_t start = 0, stop = 0, step = 1;
  for (const Value& v : a.pos)
    if (!v.is_int() && !v.is_bool()) misuse("'" + v.type_name() + "' object cannot be interpreted as an integer");
  if (a.pos.size() == 1) stop = a.pos[0].as_int();
  else if (a.pos.size() >= 2) {
    start = a.pos[0].as_int();
    stop = a.pos[1].as_int();
    if (a.pos.size() >= 3) step = a.pos[2].as_int();
  } else {
    misuse("range expected at least 1 argument, got 0");
  }
  if (step == 0) misuse("range() arg 3 must not be zero");
  const double count = std::max(0.0, (double(stop) - double(start)) / double(step));
  in.count_iterations(int64_t(std::min(count, 1e18)));  // a range larger than the loop budget is refused
  List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(Value(i));
  return Value(std::move(out));
}

}  // namespace

Value global_function(const std::string& name) {
  if (name == "raise_exception") return Value(Callable{name, raise_exception});
  if (name == "strftime_now") return Value(Callable{name, strftime_now});
  if (name == "namespace") return Value(Callable{name, make_namespace});
  if (name == "dict") return Value(Callable{name, make_dict});
  if (name == "range") return Value(Callable{name, range});
  return Value();
}

}  // namespace specscope::jinja
