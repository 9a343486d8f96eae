#pragma once
// Walks a parsed template and writes its output, with Jinja2's semantics as transformers runs it: a for loop's
// body gets a fresh scope each iteration (so `set` inside a loop does not leak out; namespace() is how templates
// carry state), macros see the template's top-level names, undefined names are falsy/empty until used in a way
// Jinja refuses. Templates come from untrusted files, so the render is bounded (Limits).
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/jinja/ast.h"
#include "engine/tokenizer/jinja/value.h"

namespace specscope::jinja {

struct Limits {
  size_t max_output_bytes = size_t(8) << 20;  // also bounds any one string the template builds
  int64_t max_loop_iterations = 1'000'000;    // loop iterations and range() sizes, over the whole render
  int max_call_depth = 64;                    // nested macro calls
};

struct RenderOptions {
  Limits limits;
  // The local wall-clock time strftime_now() formats; unset: the current local time (as transformers'
  // datetime.now()). A broken-down time, so a pinned value means the same date in every time zone.
  std::optional<std::tm> now;
};

class Interpreter {
 public:
  explicit Interpreter(RenderOptions options) : opt_(std::move(options)) {}

  // Renders `body` with `vars` as the template's context. Throws Raised, RenderError.
  std::string render(const Body& body, const Dict& vars);

  // For the builtins (builtins.h):
  Value call(const Value& callee, const CallArgs& args);
  const RenderOptions& options() const { return opt_; }
  void count_iterations(int64_t n);  // throws when the render's loop budget is spent
  void check_size(size_t bytes) const;
  // namespace() objects are the one mutable value and may end up holding themselves ({% set ns.me = ns %}):
  // the render empties every namespace it made when it ends, which breaks such cycles so they are freed.
  void track(const std::shared_ptr<Namespace>& ns) { namespaces_.push_back(ns); }

 private:
  struct Scope {
    std::unordered_map<std::string, Value> vars;
    Scope* parent = nullptr;
    const Value* find(const std::string& name) const;
  };
  enum class Flow { Normal, Break, Continue };

  Flow exec(const Body& body, Scope& scope, std::string& out);
  Flow exec_node(const Node& n, Scope& scope, std::string& out);
  Flow exec_for(const Node& n, Scope& scope, std::string& out);
  void assign(const Target& t, const Value& v, Scope& scope, int line);
  void define_macro(const Node& n, Scope& scope);

  Value eval(const Expr& e, Scope& scope);
  Value eval_binary(const Expr& e, Scope& scope);
  Value get_attr(const Value& obj, const std::string& name, int line);
  Value get_item(const Value& obj, const Value& key, int line);
  Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step, int line);
  CallArgs eval_args(const Expr& e, Scope& scope);
  void append(std::string& out, const std::string& s, int line) const;

  RenderOptions opt_;
  Scope* top_ = nullptr;  // the template's top-level scope (macros resolve names here)
  int64_t iterations_ = 0;
  int call_depth_ = 0;
  int line_ = 0;  // the line being evaluated, for errors raised by builtins
  std::vector<std::weak_ptr<Namespace>> namespaces_;
};

}  // namespace specscope::jinja
