#include "engine/tokenizer/regex.h"

#include <algorithm>
#include <stdexcept>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode.h"
#include "engine/util/error.h"

namespace specscope {

namespace {

// Limits that keep an untrusted pattern (tokenizer.json comes with models anyone may publish) from taking the process
// down; the published pre-tokenizer patterns stay far below each (nesting 6, a few hundred instructions).
// Nesting of groups and quantifiers: the parser, the compiler and the matcher recurse along it (Oniguruma's own
// parse depth limit is 4096; ours is lower because the app tokenizes on threads with default stacks).
constexpr int kMaxNesting = 1000;
// Compiled size: repeats copy their body ({n,m} m times, nested repeats multiply), so "(a{1000}){1000}" or a run of
// possessive quantifiers would otherwise grow the program exponentially.
constexpr size_t kMaxInstructions = size_t(1) << 20;
// Matcher steps (instructions run) per find_all: a fixed allowance plus one per code point of text, 45 times what the
// published patterns take at worst (22 per code point, on long runs of one character), as Oniguruma's retry limit
// bounds a match: a pattern that backtracks exponentially or quadratically on some text is stopped with an error
// instead of running for hours. Steps, not backtracks, because nested loops can run long between two backtracks.
constexpr uint64_t kStepBase = 20'000'000, kStepsPerCodePoint = 1'000;

// One predicate a character class is made of (besides plain ranges).
struct ClassItem {
  enum Kind { Category, Space, Digit, NotNewline } kind;
  bool negated = false;  // \P{..}, \S, \D, \W
  std::string category;  // for Category
};

std::vector<char32_t> case_variants(char32_t c);

struct CharClass {
  bool negated = false;
  // Under (?i): a character is in the class when it or one of its case variants is, before any negation (as
  // Oniguruma folds a class, then negates it: "(?i)[^a]" matches neither a nor A, "(?i)[\p{Lu}]" matches b).
  bool fold = false;
  std::vector<std::pair<char32_t, char32_t>> ranges;
  std::vector<ClassItem> items;
  uint64_t ascii[2] = {0, 0};  // precomputed answer for code points < 128

  bool eval(char32_t c) const {
    bool in = contains(c);
    if (fold && !in)
      for (char32_t v : case_variants(c))
        if (v != c && contains(v)) {
          in = true;
          break;
        }
    return in != negated;
  }
  bool contains(char32_t c) const {
    bool in = false;
    for (const auto& r : ranges)
      if (c >= r.first && c <= r.second) {
        in = true;
        break;
      }
    for (size_t k = 0; !in && k < items.size(); ++k) {
      const auto& it = items[k];
      bool m = false;
      switch (it.kind) {
        case ClassItem::Category: m = unicode::in_category(c, it.category); break;
        case ClassItem::Space: m = unicode::is_white_space(c); break;
        case ClassItem::Digit: m = unicode::category(c) == unicode_tables::Nd; break;
        case ClassItem::NotNewline: m = c != '\n'; break;
      }
      in = m != it.negated;
    }
    return in;
  }
  void finish() {
    for (char32_t c = 0; c < 128; ++c)
      if (eval(c)) ascii[c >> 6] |= uint64_t{1} << (c & 63);
  }
  bool matches(char32_t c) const { return c < 128 ? (ascii[c >> 6] >> (c & 63)) & 1 : eval(c); }
};

enum class Op : uint8_t { Class, Split, Jmp, Look, Atomic, Match, Bol, Eol, Bot, Eot, Mark, EmptyCheck };

struct Inst {
  Op op;
  // Split: x preferred, y alternative. Look: x sub-program, y negative, z next. Mark: x slot. EmptyCheck: x slot, y the
  // loop's exit.
  uint32_t x = 0, y = 0, z = 0;
};

struct Node {
  enum Kind { Empty, Class, Concat, Alt, Repeat, Look, Atomic, Assert } kind = Empty;
  uint32_t cls = 0;
  std::vector<Node> kids;
  int min = 0, max = -1;  // Repeat; max -1 = unbounded
  bool greedy = true, possessive = false, negative = false;
  Op assert_op = Op::Bol;
  int depth = 1;  // nesting below and including this node
};

[[noreturn]] void unsupported(const std::string& what) { throw std::invalid_argument(what); }

[[noreturn]] void too_deep() { unsupported("nested more than " + std::to_string(kMaxNesting) + " levels deep"); }

// n with its depth set from its children's (which are final); refuses a tree nested beyond kMaxNesting.
Node nested(Node n) {
  for (const auto& k : n.kids) n.depth = std::max(n.depth, k.depth + 1);
  if (n.depth > kMaxNesting) too_deep();
  return n;
}

// Simple case foldings (Unicode's CaseFolding.txt, status C and S) that differ from the single-code-point lowercase,
// leaving out the Cherokee letters (their lowercase already pairs them): what Oniguruma's (?i) equates beyond lowercase.
constexpr std::pair<char32_t, char32_t> kSpecialFolds[] = {
    {0x00B5, 0x03BC}, {0x017F, 0x0073}, {0x0345, 0x03B9}, {0x03C2, 0x03C3}, {0x03D0, 0x03B2}, {0x03D1, 0x03B8},
    {0x03D5, 0x03C6}, {0x03D6, 0x03C0}, {0x03F0, 0x03BA}, {0x03F1, 0x03C1}, {0x03F5, 0x03B5}, {0x1C80, 0x0432},
    {0x1C81, 0x0434}, {0x1C82, 0x043E}, {0x1C83, 0x0441}, {0x1C84, 0x0442}, {0x1C85, 0x0442}, {0x1C86, 0x044A},
    {0x1C87, 0x0463}, {0x1C88, 0xA64B}, {0x1E9B, 0x1E61}, {0x1FBE, 0x03B9}};

// The character c folds to under (?i): its special folding, else its lowercase when that is one code point.
char32_t fold_of(char32_t c) {
  for (const auto& [from, to] : kSpecialFolds)
    if (from == c) return to;
  if (c < 128) return c >= 'A' && c <= 'Z' ? c | 0x20 : c;
  const auto low = unicode::lowercase_cp(c);
  return low.size() == 1 ? low[0] : c;
}

// Every character that folds to `folded` other than itself, from a table of (fold, character) pairs made on the first
// case-insensitive match of a non-ASCII character (one pass over the code space).
void add_folding_to(char32_t folded, std::vector<char32_t>& out) {
  static const auto table = [] {
    std::vector<std::pair<char32_t, char32_t>> pairs;
    for (char32_t u = 0; u <= 0x10FFFF; ++u) {
      if (u >= 0xD800 && u <= 0xDFFF) continue;
      if (const char32_t f = fold_of(u); f != u) pairs.push_back({f, u});
    }
    std::sort(pairs.begin(), pairs.end());
    return pairs;
  }();
  for (auto it = std::lower_bound(table.begin(), table.end(), std::make_pair(folded, char32_t(0)));
       it != table.end() && it->first == folded; ++it)
    out.push_back(it->second);
}

// The characters Oniguruma's (?i) treats as equal to c (c first): those with the same simple case folding. ASCII
// letters are answered without the table (the published patterns' (?i:'s|'t|...) need only them): the other case,
// and the long s and the Kelvin sign, which fold to s and k.
std::vector<char32_t> case_variants(char32_t c) {
  std::vector<char32_t> v{c};
  if (c < 128) {
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') {
      v.push_back(c ^ 0x20);
      if ((c | 0x20) == 's') v.push_back(0x17F);
      if ((c | 0x20) == 'k') v.push_back(0x212A);
    }
    return v;
  }
  const char32_t f = fold_of(c);
  if (f != c) v.push_back(f);
  std::vector<char32_t> same;
  add_folding_to(f, same);
  for (char32_t x : same)
    if (x != c) v.push_back(x);
  return v;
}

class Parser {
 public:
  Parser(std::u32string p, std::vector<CharClass>& classes) : p_(std::move(p)), classes_(classes) {}

  Node parse() {
    Node n = alt(false);
    if (i_ != p_.size()) unsupported("unbalanced ')'");
    return n;
  }

 private:
  std::u32string p_;
  size_t i_ = 0;
  std::vector<CharClass>& classes_;
  int open_groups_ = 0;

  bool eof() const { return i_ >= p_.size(); }
  char32_t peek() const { return eof() ? 0 : p_[i_]; }
  bool take(char32_t c) {
    if (!eof() && p_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

  uint32_t add_class(CharClass c) {
    c.finish();
    classes_.push_back(std::move(c));
    return static_cast<uint32_t>(classes_.size() - 1);
  }
  Node class_node(CharClass c) {
    Node n;
    n.kind = Node::Class;
    n.cls = add_class(std::move(c));
    return n;
  }
  Node literal(char32_t c, bool icase) {
    CharClass cc;
    for (char32_t v : icase ? case_variants(c) : std::vector<char32_t>{c}) cc.ranges.push_back({v, v});
    return class_node(std::move(cc));
  }

  // An inline (?i) stays on to the end of the enclosing group, across later alternatives too (as in
  // Oniguruma and Perl), so concat() updates `icase` for the branches after it.
  Node alt(bool icase) {
    std::vector<Node> branches;
    branches.push_back(concat(icase));
    while (take('|')) branches.push_back(concat(icase));
    if (branches.size() == 1) return std::move(branches[0]);
    Node n;
    n.kind = Node::Alt;
    n.kids = std::move(branches);
    return nested(std::move(n));
  }

  Node concat(bool& icase) {
    Node n;
    n.kind = Node::Concat;
    while (!eof() && peek() != '|' && peek() != ')') {
      // An inline flag group (?i) changes the flags for the rest of the enclosing group.
      if (p_.compare(i_, 4, U"(?i)") == 0) {
        i_ += 4;
        icase = true;
        continue;
      }
      n.kids.push_back(repeat(icase));
    }
    return nested(std::move(n));
  }

  bool read_int(int& out) {
    size_t start = i_;
    out = 0;
    while (!eof() && peek() >= '0' && peek() <= '9') {
      out = out * 10 + static_cast<int>(peek() - '0');
      if (out > 100000) unsupported("repeat count too large");
      ++i_;
    }
    return i_ > start;
  }

  Node repeat(bool icase) {
    Node atom_node = atom(icase);
    for (;;) {
      int mn, mx;
      bool interval = false, exact = false;  // {n,m}-style, and of those {n}
      const size_t save = i_;
      if (take('*')) {
        mn = 0, mx = -1;
      } else if (take('+')) {
        mn = 1, mx = -1;
      } else if (take('?')) {
        mn = 0, mx = 1;
      } else if (take('{')) {
        // {n} {n,} {n,m} {,m}; anything else is a literal '{' in Oniguruma.
        int a = 0, b = -1;
        const bool has_a = read_int(a), range = take(',');
        if (range) {
          if (!read_int(b)) b = -1;
        } else {
          b = a;
        }
        if ((!has_a && b < 0) || !take('}')) {
          i_ = save;
          return atom_node;  // the caller will read '{' as a literal next
        }
        if (!has_a) a = 0;
        if (b >= 0 && b < a) unsupported("bad repeat range");
        mn = a, mx = b;
        interval = true;
        exact = !range;
      } else {
        return atom_node;
      }
      Node r;
      r.kind = Node::Repeat;
      r.min = mn, r.max = mx;
      // Oniguruma's syntax (the tokenizers crate's): after an interval, '+' is a quantifier of its own, "x{1,3}+" is
      // (x{1,3})+, not possessive; after an exact {n}, '?' is one too, "x{2}?" is (x{2})?, not lazy. The loop takes
      // them as the next quantifier.
      if (!exact && take('?')) {
        r.greedy = false;
      } else if (!interval && take('+')) {
        r.possessive = true;
      }
      r.kids.push_back(std::move(atom_node));
      atom_node = nested(std::move(r));
    }
  }

  Node atom(bool icase) {
    const char32_t c = p_[i_++];
    switch (c) {
      case '(': return group(icase);
      case '[': return class_node(char_class(icase));
      case '.': {
        CharClass cc;
        cc.items.push_back({ClassItem::NotNewline, false, {}});
        return class_node(std::move(cc));
      }
      case '^': return assert_node(Op::Bol);
      case '$': return assert_node(Op::Eol);
      case '\\': return escape(icase);
      case '*':
      case '+':
      case '?': unsupported("quantifier with nothing to repeat");
      default: return literal(c, icase);
    }
  }

  Node assert_node(Op op) {
    Node n;
    n.kind = Node::Assert;
    n.assert_op = op;
    return n;
  }

  Node group(bool icase) {
    // The parser recurses once per open group: refuse a deep one before the stack does.
    if (++open_groups_ > kMaxNesting) too_deep();
    Node n;
    if (take('?')) {
      if (take(':')) {
        n = alt(icase);
      } else if (peek() == '=' || peek() == '!') {
        n.kind = Node::Look;
        n.negative = p_[i_++] == '!';
        n.kids.push_back(alt(icase));
      } else if (take('>')) {
        n.kind = Node::Atomic;
        n.kids.push_back(alt(icase));
      } else if (p_.compare(i_, 2, U"i:") == 0) {
        i_ += 2;
        n = alt(true);
      } else if (p_.compare(i_, 3, U"-i:") == 0) {
        i_ += 3;
        n = alt(false);
      } else {
        unsupported("group syntax (?" + std::string(1, static_cast<char>(peek())) + "...)");
      }
    } else {
      n = alt(icase);  // capturing groups only group here; captures are never read
    }
    if (!take(')')) unsupported("missing ')'");
    --open_groups_;
    return nested(std::move(n));
  }

  char32_t hex(size_t digits) {
    char32_t v = 0;
    for (size_t k = 0; k < digits; ++k) {
      if (eof()) unsupported("short hex escape");
      const char32_t d = p_[i_++];
      v <<= 4;
      if (d >= '0' && d <= '9') v |= d - '0';
      else if ((d | 0x20) >= 'a' && (d | 0x20) <= 'f') v |= (d | 0x20) - 'a' + 10;
      else unsupported("bad hex escape");
    }
    return v;
  }

  // Reads the escape after '\'. Returns true and sets `item` for a class shorthand, false and sets `cp`
  // for a single character.
  bool escape_item(ClassItem& item, char32_t& cp) {
    if (eof()) unsupported("trailing backslash");
    const char32_t c = p_[i_++];
    switch (c) {
      case 's': item = {ClassItem::Space, false, {}}; return true;
      case 'S': item = {ClassItem::Space, true, {}}; return true;
      case 'd': item = {ClassItem::Digit, false, {}}; return true;
      case 'D': item = {ClassItem::Digit, true, {}}; return true;
      // \w and \W are refused: Oniguruma's Unicode word class is not a plain union of general categories
      // (it takes ² but not the Aegean numbers, for one), and no supported pattern family needs it.
      case 'p':
      case 'P': {
        if (!take('{')) unsupported("\\p without {...}");
        std::string name;
        bool neg = c == 'P';
        if (take('^')) neg = !neg;
        while (!eof() && peek() != '}') name.push_back(static_cast<char>(p_[i_++]));
        if (!take('}')) unsupported("unterminated \\p{");
        if (!unicode::is_known_category(name)) unsupported("unicode property \\p{" + name + "}");
        item = {ClassItem::Category, neg, name};
        return true;
      }
      case 't': cp = '\t'; return false;
      case 'n': cp = '\n'; return false;
      case 'r': cp = '\r'; return false;
      case 'f': cp = '\f'; return false;
      case 'v': cp = '\v'; return false;
      case 'e': cp = 0x1B; return false;
      case 'a': cp = 0x07; return false;
      case 'x':
        if (take('{')) {
          char32_t v = 0;
          size_t n = 0;
          while (!eof() && peek() != '}') {
            v = (v << 4) | hex(1);
            if (++n > 8) unsupported("bad \\x{...}");
          }
          if (!take('}') || n == 0) unsupported("bad \\x{...}");
          cp = v;
        } else {
          cp = hex(2);
        }
        return false;
      case 'u': cp = hex(4); return false;
      default:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
          unsupported(std::string("escape \\") + static_cast<char>(c));
        cp = c;  // escaped punctuation or any other symbol stands for itself
        return false;
    }
  }

  Node escape(bool icase) {
    if (!eof()) {
      const char32_t c = peek();
      if (c == 'A' || c == 'z' || c == 'Z') {
        ++i_;
        return assert_node(c == 'A' ? Op::Bot : Op::Eot);
      }
    }
    ClassItem item{ClassItem::Space, false, {}};
    char32_t cp = 0;
    if (escape_item(item, cp)) {
      CharClass cc;
      cc.items.push_back(item);
      return class_node(std::move(cc));
    }
    return literal(cp, icase);
  }

  CharClass char_class(bool icase) {
    CharClass cc;
    if (take('^')) cc.negated = true;
    bool first = true;
    cc.fold = icase;
    auto add_range = [&](char32_t a, char32_t b) { cc.ranges.push_back({a, b}); };
    for (;;) {
      if (eof()) unsupported("unterminated character class");
      char32_t c = p_[i_];
      if (c == ']' && !first) {
        ++i_;
        break;
      }
      first = false;
      if (c == '[') unsupported("nested character class or POSIX bracket");
      if (c == '&' && i_ + 1 < p_.size() && p_[i_ + 1] == '&') unsupported("class intersection &&");
      ++i_;
      char32_t lo;
      if (c == '\\') {
        ClassItem item{ClassItem::Space, false, {}};
        if (escape_item(item, lo)) {
          cc.items.push_back(item);
          continue;
        }
      } else {
        lo = c;
      }
      // A range a-b (a '-' before ']' is literal).
      if (peek() == '-' && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        char32_t hi = p_[i_++];
        if (hi == '\\') {
          ClassItem item{ClassItem::Space, false, {}};
          if (escape_item(item, hi)) unsupported("class shorthand as a range end");
        } else if (hi == '[') {
          unsupported("nested character class");
        }
        if (hi < lo) unsupported("reversed class range");
        add_range(lo, hi);
      } else {
        add_range(lo, lo);
      }
    }
    return cc;
  }
};

// Shortest length a node can match; an unbounded repeat of a node that can match empty gets the empty-iteration
// check (Mark / EmptyCheck), the others go without it.
size_t min_len(const Node& n) {
  switch (n.kind) {
    case Node::Class: return 1;
    case Node::Concat: {
      size_t s = 0;
      for (const auto& k : n.kids) s += min_len(k);
      return s;
    }
    case Node::Alt: {
      size_t m = SIZE_MAX;
      for (const auto& k : n.kids) m = std::min(m, min_len(k));
      return m;
    }
    case Node::Repeat: return n.min == 0 ? 0 : n.min * min_len(n.kids[0]);
    case Node::Atomic: return min_len(n.kids[0]);
    default: return 0;
  }
}

}  // namespace

struct Regex::Program {
  std::vector<CharClass> classes;
  std::vector<Inst> code;
  uint32_t slots = 0;  // loops with an empty-iteration check: each keeps where its current iteration started

  uint32_t emit(Inst i) {
    if (code.size() >= kMaxInstructions)
      throw std::invalid_argument("compiles to more than " + std::to_string(kMaxInstructions) + " instructions");
    code.push_back(i);
    return static_cast<uint32_t>(code.size() - 1);
  }
  uint32_t pc() const { return static_cast<uint32_t>(code.size()); }

  // Emits a self-contained sub-program (ending in Match) and returns its start.
  uint32_t sub(const Node& n) {
    const uint32_t jmp = emit({Op::Jmp});
    const uint32_t start = pc();
    compile(n);
    emit({Op::Match});
    code[jmp].x = pc();
    return start;
  }

  void compile(const Node& n) {
    switch (n.kind) {
      case Node::Empty: break;
      case Node::Class: emit({Op::Class, n.cls}); break;
      case Node::Assert: emit({n.assert_op}); break;
      case Node::Concat:
        for (const auto& k : n.kids) compile(k);
        break;
      case Node::Alt: {
        std::vector<uint32_t> jumps;
        for (size_t k = 0; k < n.kids.size(); ++k) {
          if (k + 1 < n.kids.size()) {
            const uint32_t split = emit({Op::Split});
            code[split].x = pc();
            compile(n.kids[k]);
            jumps.push_back(emit({Op::Jmp}));
            code[split].y = pc();
          } else {
            compile(n.kids[k]);
          }
        }
        for (uint32_t j : jumps) code[j].x = pc();
        break;
      }
      case Node::Look: {
        const uint32_t start = sub(n.kids[0]);
        const uint32_t look = emit({Op::Look, start, n.negative ? 1u : 0u});
        code[look].z = pc();
        break;
      }
      case Node::Atomic: {
        const uint32_t start = sub(n.kids[0]);
        const uint32_t at = emit({Op::Atomic, start});
        code[at].z = pc();
        break;
      }
      case Node::Repeat: {
        if (n.possessive) {
          Node inner = n;
          inner.possessive = false;
          Node atomic;
          atomic.kind = Node::Atomic;
          atomic.kids.push_back(std::move(inner));
          compile(atomic);
          break;
        }
        const Node& body = n.kids[0];
        for (int k = 0; k < n.min; ++k) compile(body);
        if (n.max < 0) {
          // A body that can match empty gets Oniguruma's empty-iteration check: an iteration that matched nothing
          // leaves the loop (instead of looping forever, or being refused).
          const bool may_be_empty = min_len(body) == 0;
          const uint32_t slot = may_be_empty ? slots++ : 0;
          const uint32_t loop = emit({Op::Split});
          const uint32_t body_start = pc();
          if (may_be_empty) emit({Op::Mark, slot});
          compile(body);
          const uint32_t check = may_be_empty ? emit({Op::EmptyCheck, slot}) : 0;
          emit({Op::Jmp, loop});
          const uint32_t end = pc();
          if (may_be_empty) code[check].y = end;
          code[loop].x = n.greedy ? body_start : end;
          code[loop].y = n.greedy ? end : body_start;
        } else {
          // Optional copies nest, so backtracking gives up the last copy first: x{1,3} = x(x(x)?)?
          std::vector<uint32_t> splits;
          for (int k = n.min; k < n.max; ++k) {
            const uint32_t split = emit({Op::Split});
            splits.push_back(split);
            const uint32_t body_start = pc();
            compile(body);
            code[split].x = body_start;  // fixed up below for lazy
          }
          const uint32_t end = pc();
          for (uint32_t s : splits) {
            if (n.greedy) {
              code[s].y = end;
            } else {
              code[s].y = code[s].x;
              code[s].x = end;
            }
          }
        }
        break;
      }
    }
  }

  struct Frame {
    uint32_t pc;  // kRestore | slot: not a choice point but a slot's earlier value, put back when backtracking past it
    uint32_t pos;
  };
  static constexpr uint32_t kRestore = 0x80000000u;
  struct StepLimit {};
  // One search's state: the backtracking stack, the loops' iteration starts, and the steps left to it.
  struct Thread {
    std::vector<Frame> stack;
    std::vector<uint32_t> slots;
    uint64_t steps_left = 0;
  };

  // Backtracking interpreter; returns whether the program from `pc` matches at `pos` (sets *end). Throws
  // StepLimit when th.steps_left runs out.
  bool run(uint32_t pc, uint32_t pos, const std::u32string& text, uint32_t* end, Thread& th) const {
    const size_t base = th.stack.size();
    const uint32_t n = static_cast<uint32_t>(text.size());
    for (;;) {
      if (th.steps_left-- == 0) throw StepLimit{};
      const Inst& in = code[pc];
      bool ok = true;
      switch (in.op) {
        case Op::Class:
          if (pos < n && classes[in.x].matches(text[pos])) {
            ++pos, ++pc;
          } else {
            ok = false;
          }
          break;
        case Op::Split:
          th.stack.push_back({in.y, pos});
          pc = in.x;
          break;
        case Op::Jmp: pc = in.x; break;
        case Op::Look: {
          uint32_t e;
          const bool r = run(in.x, pos, text, &e, th);
          if (r != (in.y != 0)) {
            pc = in.z;
          } else {
            ok = false;
          }
          break;
        }
        case Op::Atomic: {
          uint32_t e;
          if (run(in.x, pos, text, &e, th)) {
            pos = e, pc = in.z;
          } else {
            ok = false;
          }
          break;
        }
        case Op::Mark:
          th.stack.push_back({kRestore | in.x, th.slots[in.x]});
          th.slots[in.x] = pos;
          ++pc;
          break;
        case Op::EmptyCheck: pc = pos == th.slots[in.x] ? in.y : pc + 1; break;
        case Op::Match:
          *end = pos;
          th.stack.resize(base);
          return true;
        case Op::Bol: ok = pos == 0 || text[pos - 1] == '\n'; ++pc; break;
        case Op::Eol: ok = pos == n || text[pos] == '\n'; ++pc; break;
        case Op::Bot: ok = pos == 0; ++pc; break;
        case Op::Eot: ok = pos == n; ++pc; break;
      }
      while (!ok) {
        if (th.stack.size() == base) return false;
        const Frame f = th.stack.back();
        th.stack.pop_back();
        if (f.pc & kRestore) {
          th.slots[f.pc & ~kRestore] = f.pos;
          continue;
        }
        pc = f.pc, pos = f.pos, ok = true;
      }
    }
  }
};

Regex::Regex(std::string_view pattern) : pattern_(pattern), prog_(std::make_unique<Program>()) {
  if (find_invalid_utf8(pattern) != std::string_view::npos) throw std::invalid_argument("pattern is not UTF-8");
  Parser parser(unicode::to_u32(pattern), prog_->classes);
  const Node root = parser.parse();
  prog_->compile(root);
  prog_->emit({Op::Match});
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  // Work on code points; keep each one's byte offset to report byte ranges.
  std::u32string cps;
  std::vector<uint32_t> offs;
  cps.reserve(text.size());
  offs.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    offs.push_back(static_cast<uint32_t>(i));
    cps.push_back(unicode::next_cp(text, i));
  }
  offs.push_back(static_cast<uint32_t>(text.size()));

  thread_local Program::Thread th;
  th.slots.assign(prog_->slots, 0);
  std::vector<std::pair<size_t, size_t>> out;
  const uint32_t n = static_cast<uint32_t>(cps.size());
  const uint64_t allowed = kStepBase + kStepsPerCodePoint * uint64_t(n);
  th.steps_left = allowed;
  uint32_t from = 0;
  int64_t last_end = -1;
  while (from <= n) {
    uint32_t start = from, end = 0;
    bool found = false;
    for (; start <= n; ++start) {
      th.stack.clear();
      bool matched = false;
      try {
        matched = prog_->run(0, start, cps, &end, th);
      } catch (const Program::StepLimit&) {
        throw InputError("prompt", "the tokenizer's regex gave up after " + std::to_string(allowed) +
                                       " steps on a text of " + std::to_string(n) +
                                       " characters (pattern: " + pattern_ + ")");
      }
      if (matched) {
        found = true;
        break;
      }
    }
    if (!found) break;
    if (end == start && static_cast<int64_t>(end) == last_end) {
      // Oniguruma's iterator refuses an empty match right where the previous match ended; step one char.
      from = start + 1;
      continue;
    }
    out.emplace_back(offs[start], offs[end]);
    last_end = end;
    from = end;  // after an empty match the next search starts here too; an empty match is refused above
  }
  return out;
}

}  // namespace specscope
