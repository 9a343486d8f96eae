#include "engine/tokenizer/jinja/parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "engine/tokenizer/jinja/errors.h"
#include "engine/tokenizer/jinja/lexer.h"

namespace specscope::jinja {

namespace {

using T = Token::Type;

std::string describe(const Token& t) {
  switch (t.type) {
    case T::End: return "end of template";
    case T::Text: return "text";
    case T::VarBegin: return "'{{'";
    case T::VarEnd: return "'}}'";
    case T::BlockBegin: return "'{%'";
    case T::BlockEnd: return "'%}'";
    case T::String: return "string";
    default: return "'" + t.value + "'";
  }
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, int max_depth) : t_(std::move(tokens)), max_depth_(max_depth) {}

  Body parse_template() {
    std::string end_tag;
    Body body = subparse({}, end_tag);
    return body;
  }

 private:
  // --- token stream ---
  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool is_op(const char* op) const { return cur().type == T::Op && cur().value == op; }
  bool is_name(const char* n) const { return cur().type == T::Name && cur().value == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail(const std::string& what) const { throw SyntaxError(cur().line, what); }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected '") + op + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != T::Name) fail("expected a name, got " + describe(cur()));
    std::string n = cur().value;
    next();
    return n;
  }
  void expect_block_end() {
    if (cur().type != T::BlockEnd) fail("expected end of statement block, got " + describe(cur()));
    next();
  }

  struct DepthGuard {
    DepthGuard(Parser& p) : p(p) {
      if (++p.depth_ > p.max_depth_)
        p.fail("template nested too deeply (more than " + std::to_string(p.max_depth_) + " levels)");
    }
    ~DepthGuard() { --p.depth_; }
    Parser& p;
  };

  ExprPtr make(Expr::Kind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }

  // Chains the grammar builds in loops (a+b+c..., x|f|g..., a.b.c...) nest in the tree, and the interpreter
  // recurses on the tree: a node's height is bounded like the parser's own recursion.
  ExprPtr bounded(ExprPtr e) {
    int h = 0;
    for (const Expr* c : {e->a.get(), e->b.get(), e->c.get(), e->d.get()})
      if (c) h = std::max(h, c->height);
    for (const auto& x : e->args) h = std::max(h, x->height);
    for (const auto& [k, x] : e->kwargs) h = std::max(h, x->height);
    for (const auto& [k, v] : e->pairs) h = std::max({h, k->height, v->height});
    e->height = h + 1;
    if (e->height > 4 * max_depth_)
      fail("expression nested too deeply (more than " + std::to_string(4 * max_depth_) + " levels)");
    return e;
  }

  // --- statements ---

  // Parses until a block tag named in `ends` (its name is left in `found`, the stream after it) or the end.
  Body subparse(const std::set<std::string>& ends, std::string& found) {
    DepthGuard g(*this);
    Body body;
    for (;;) {
      const Token& tok = cur();
      if (tok.type == T::End) {
        if (!ends.empty()) {
          std::string want;
          for (const auto& e : ends) want += (want.empty() ? "'" : " or '") + e + "'";
          fail("unexpected end of template, expected " + want);
        }
        return body;
      }
      if (tok.type == T::Text) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::Text;
        n->line = tok.line;
        n->text = tok.value;
        body.push_back(std::move(n));
        next();
      } else if (tok.type == T::VarBegin) {
        next();
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::Output;
        n->line = tok.line;
        n->expr = parse_tuple(true);
        if (cur().type != T::VarEnd) fail("expected end of print statement, got " + describe(cur()));
        next();
        body.push_back(std::move(n));
      } else if (tok.type == T::BlockBegin) {
        next();
        if (cur().type != T::Name) fail("expected a tag name, got " + describe(cur()));
        const std::string tag = cur().value;
        if (ends.count(tag)) {
          found = tag;
          next();
          return body;
        }
        body.push_back(statement());
      } else {
        fail("unexpected " + describe(tok));
      }
    }
  }

  std::unique_ptr<Node> statement() {
    const int line = cur().line;
    const std::string tag = cur().value;
    next();
    auto n = std::make_unique<Node>();
    n->line = line;
    if (tag == "if") {
      n->kind = Node::Kind::If;
      ExprPtr cond = parse_tuple(true);
      expect_block_end();
      for (;;) {
        std::string found;
        Body b = subparse({"elif", "else", "endif"}, found);
        n->branches.emplace_back(std::move(cond), std::move(b));
        if (found == "elif") {
          cond = parse_tuple(true);
          expect_block_end();
          continue;
        }
        if (found == "else") {
          expect_block_end();
          n->else_body = subparse({"endif"}, found);
        }
        expect_block_end();
        break;
      }
    } else if (tag == "for") {
      n->kind = Node::Kind::For;
      n->target = parse_target(false);
      if (!skip_name("in")) fail("expected 'in', got " + describe(cur()));
      n->expr = parse_tuple(false);
      if (skip_name("if")) n->cond = parse_expression(true);
      if (is_name("recursive")) fail("recursive loops are not supported");
      expect_block_end();
      std::string found;
      n->body = subparse({"else", "endfor"}, found);
      if (found == "else") {
        expect_block_end();
        n->else_body = subparse({"endfor"}, found);
      }
      expect_block_end();
    } else if (tag == "set") {
      n->target = parse_target(true);
      if (skip_op("=")) {
        n->kind = Node::Kind::Set;
        n->expr = parse_tuple(true);
        expect_block_end();
      } else {
        n->kind = Node::Kind::SetBlock;
        if (n->target.tuple || !n->target.attr.empty()) fail("a block set needs a plain name");
        expect_block_end();
        std::string found;
        n->body = subparse({"endset"}, found);
        expect_block_end();
      }
    } else if (tag == "macro") {
      n->kind = Node::Kind::Macro;
      n->text = expect_name();
      expect_op("(");
      while (!skip_op(")")) {
        if (!n->params.empty()) expect_op(",");
        if (skip_op(")")) break;
        std::string p = expect_name();
        ExprPtr def;
        if (skip_op("=")) def = parse_expression(true);
        n->params.emplace_back(std::move(p), std::move(def));
      }
      expect_block_end();
      std::string found;
      n->body = subparse({"endmacro"}, found);
      expect_block_end();
    } else if (tag == "break" || tag == "continue") {
      n->kind = tag == "break" ? Node::Kind::Break : Node::Kind::Continue;
      expect_block_end();
    } else if (tag == "filter") {
      n->kind = Node::Kind::FilterBlock;
      // The filter chain applies to the body's text: parsed as filters on a placeholder name.
      auto placeholder = make(Expr::Kind::Name, line);
      placeholder->name = " body";
      n->expr = parse_filters(std::move(placeholder), /*first_without_pipe=*/true);
      expect_block_end();
      std::string found;
      n->body = subparse({"endfilter"}, found);
      expect_block_end();
    } else if (tag == "generation") {
      // transformers' {% generation %} marks assistant text for the assistant-token mask; rendering ignores it.
      n->kind = Node::Kind::Body;
      expect_block_end();
      std::string found;
      n->body = subparse({"endgeneration"}, found);
      expect_block_end();
    } else {
      throw SyntaxError(line, "unknown tag '" + tag + "'");
    }
    return n;
  }

  Target parse_target(bool allow_attr) {
    Target t;
    const bool paren = skip_op("(");
    t.names.push_back(expect_name());
    if (allow_attr && skip_op(".")) {
      t.attr = expect_name();
      if (paren) expect_op(")");
      return t;
    }
    while (skip_op(",")) {
      t.tuple = true;
      if (cur().type != T::Name) break;
      t.names.push_back(expect_name());
    }
    if (paren) {
      t.tuple = true;
      expect_op(")");
    }
    return t;
  }

  // --- expressions (Jinja2's parser, level by level) ---

  // An expression or an unparenthesized tuple `a, b`.
  ExprPtr parse_tuple(bool with_condexpr) {
    const int line = cur().line;
    ExprPtr first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    auto tup = make(Expr::Kind::TupleLit, line);
    tup->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (cur().type == T::BlockEnd || cur().type == T::VarEnd || is_name("if") || is_op(")")) break;
      tup->args.push_back(parse_expression(with_condexpr));
    }
    return bounded(std::move(tup));
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard g(*this);
    if (!with_condexpr) return parse_or();
    ExprPtr e = parse_or();
    while (is_name("if")) {
      const int line = cur().line;
      next();
      auto c = make(Expr::Kind::Cond, line);
      c->b = parse_or();  // condition
      c->a = std::move(e);
      if (skip_name("else")) c->c = parse_expression(true);
      e = bounded(std::move(c));
    }
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      auto e = make(Expr::Kind::Or, cur().line);
      next();
      e->a = std::move(left);
      e->b = parse_and();
      left = bounded(std::move(e));
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      auto e = make(Expr::Kind::And, cur().line);
      next();
      e->a = std::move(left);
      e->b = parse_not();
      left = bounded(std::move(e));
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard g(*this);
      auto e = make(Expr::Kind::Unary, cur().line);
      e->name = "not";
      next();
      e->a = parse_not();
      return bounded(std::move(e));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr left = parse_math1();
    for (;;) {
      std::string op;
      const int line = cur().line;
      if (cur().type == T::Op && (cur().value == "==" || cur().value == "!=" || cur().value == "<" ||
                                  cur().value == "<=" || cur().value == ">" || cur().value == ">=")) {
        op = cur().value;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && peek().type == T::Name && peek().value == "in") {
        op = "not in";
        next();
        next();
      } else {
        return left;
      }
      auto e = make(Expr::Kind::Binary, line);
      e->name = op;
      e->a = std::move(left);
      e->b = parse_math1();
      left = bounded(std::move(e));
    }
  }

  ExprPtr binary(ExprPtr left, const std::string& op, int line, ExprPtr right) {
    auto e = make(Expr::Kind::Binary, line);
    e->name = op;
    e->a = std::move(left);
    e->b = std::move(right);
    return bounded(std::move(e));
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = cur().value;
      const int line = cur().line;
      next();
      left = binary(std::move(left), op, line, parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      const int line = cur().line;
      next();
      left = binary(std::move(left), "~", line, parse_math2());
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = cur().value;
      const int line = cur().line;
      next();
      left = binary(std::move(left), op, line, parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const int line = cur().line;
      next();
      left = binary(std::move(left), "**", line, parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard g(*this);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      auto e = make(Expr::Kind::Unary, cur().line);
      e->name = cur().value;
      next();
      e->a = parse_unary(false);
      node = bounded(std::move(e));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token tok = cur();
    switch (tok.type) {
      case T::Name: {
        next();
        if (tok.value == "true" || tok.value == "True") return literal(Value(true), tok.line);
        if (tok.value == "false" || tok.value == "False") return literal(Value(false), tok.line);
        if (tok.value == "none" || tok.value == "None") return literal(Value(None{}), tok.line);
        auto e = make(Expr::Kind::Name, tok.line);
        e->name = tok.value;
        return e;
      }
      case T::String: {
        std::string s;
        while (cur().type == T::String) {  // adjacent literals concatenate
          s += cur().value;
          next();
        }
        return literal(Value(std::move(s)), tok.line);
      }
      case T::Int: {
        next();
        errno = 0;
        const long long v = std::strtoll(tok.value.c_str(), nullptr, 10);
        if (errno == ERANGE) throw SyntaxError(tok.line, "integer literal too large: " + tok.value);
        return literal(Value(int64_t(v)), tok.line);
      }
      case T::Float: {
        next();
        return literal(Value(std::strtod(tok.value.c_str(), nullptr)), tok.line);
      }
      case T::Op:
        if (tok.value == "(") {
          next();
          if (skip_op(")")) {
            auto e = make(Expr::Kind::TupleLit, tok.line);
            return e;
          }
          ExprPtr inner = parse_expression(true);
          if (is_op(",")) {
            auto tup = make(Expr::Kind::TupleLit, tok.line);
            tup->args.push_back(std::move(inner));
            while (skip_op(",")) {
              if (is_op(")")) break;
              tup->args.push_back(parse_expression(true));
            }
            inner = bounded(std::move(tup));
          }
          expect_op(")");
          return inner;
        }
        if (tok.value == "[") {
          next();
          auto e = make(Expr::Kind::ListLit, tok.line);
          while (!skip_op("]")) {
            if (!e->args.empty()) expect_op(",");
            if (skip_op("]")) break;
            e->args.push_back(parse_expression(true));
          }
          return bounded(std::move(e));
        }
        if (tok.value == "{") {
          next();
          auto e = make(Expr::Kind::DictLit, tok.line);
          while (!skip_op("}")) {
            if (!e->pairs.empty()) expect_op(",");
            if (skip_op("}")) break;
            ExprPtr k = parse_expression(true);
            expect_op(":");
            e->pairs.emplace_back(std::move(k), parse_expression(true));
          }
          return bounded(std::move(e));
        }
        break;
      default:
        break;
    }
    fail("unexpected " + describe(tok));
  }

  ExprPtr literal(Value v, int line) {
    auto e = make(Expr::Kind::Literal, line);
    e->literal = std::move(v);
    return e;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    for (;;) {
      const int line = cur().line;
      if (is_op(".")) {
        next();
        if (cur().type == T::Name) {
          auto e = make(Expr::Kind::Attr, line);
          e->name = cur().value;
          next();
          e->a = std::move(node);
          node = bounded(std::move(e));
        } else if (cur().type == T::Int) {  // x.0 is x[0]
          auto e = make(Expr::Kind::Item, line);
          e->a = std::move(node);
          e->b = literal(Value(int64_t(std::strtoll(cur().value.c_str(), nullptr, 10))), line);
          next();
          node = bounded(std::move(e));
        } else {
          fail("expected an attribute name after '.', got " + describe(cur()));
        }
      } else if (is_op("[")) {
        next();
        node = parse_subscript(std::move(node), line);
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj, int line) {
    ExprPtr parts[3];
    int colons = 0;
    for (;;) {
      if (is_op("]")) break;
      if (is_op(":")) {
        if (++colons > 2) fail("too many ':' in a slice");
        next();
        continue;
      }
      if (parts[colons]) fail("expected ':' or ']', got " + describe(cur()));
      parts[colons] = parse_expression(true);
    }
    expect_op("]");
    if (colons == 0) {
      if (!parts[0]) fail("empty subscript");
      auto e = make(Expr::Kind::Item, line);
      e->a = std::move(obj);
      e->b = std::move(parts[0]);
      return bounded(std::move(e));
    }
    auto e = make(Expr::Kind::Slice, line);
    e->a = std::move(obj);
    e->b = std::move(parts[0]);
    e->c = std::move(parts[1]);
    e->d = std::move(parts[2]);
    return bounded(std::move(e));
  }

  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!skip_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (skip_op(")")) break;
      if (is_op("*") || is_op("**")) fail("*args and **kwargs in calls are not supported");
      if (cur().type == T::Name && peek().type == T::Op && peek().value == "=") {
        std::string k = cur().value;
        next();
        next();
        e.kwargs.emplace_back(std::move(k), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) fail("positional argument after a keyword argument");
        e.args.push_back(parse_expression(true));
      }
    }
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = make(Expr::Kind::Call, cur().line);
    e->a = std::move(callee);
    parse_call_args(*e);
    return bounded(std::move(e));
  }

  ExprPtr parse_filters(ExprPtr node, bool first_without_pipe) {
    bool need_pipe = !first_without_pipe;
    for (;;) {
      if (need_pipe && !skip_op("|")) return node;
      need_pipe = true;
      const int line = cur().line;
      auto e = make(Expr::Kind::Filter, line);
      e->name = expect_name();
      while (skip_op(".")) e->name += "." + expect_name();
      if (is_op("(")) parse_call_args(*e);
      e->a = std::move(node);
      node = bounded(std::move(e));
      if (first_without_pipe && !is_op("|")) return node;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    for (;;) {
      if (is_op("|")) {
        next();
        auto e = make(Expr::Kind::Filter, cur().line);
        e->name = expect_name();
        while (skip_op(".")) e->name += "." + expect_name();
        if (is_op("(")) parse_call_args(*e);
        e->a = std::move(node);
        node = bounded(std::move(e));
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_test(ExprPtr node) {
    auto e = make(Expr::Kind::Test, cur().line);
    next();  // 'is'
    e->negated = skip_name("not");
    e->name = expect_name();
    while (skip_op(".")) e->name += "." + expect_name();
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((cur().type == T::Name || cur().type == T::String || cur().type == T::Int ||
                cur().type == T::Float || is_op("[") || is_op("{")) &&
               !(is_name("else") || is_name("or") || is_name("and") || is_name("if"))) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      e->args.push_back(parse_postfix(parse_primary()));
    }
    e->a = std::move(node);
    return bounded(std::move(e));
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
  int max_depth_;
};

}  // namespace

Body parse(const std::string& source, int max_depth) { return Parser(tokenize(source), max_depth).parse_template(); }

}  // namespace specscope::jinja
