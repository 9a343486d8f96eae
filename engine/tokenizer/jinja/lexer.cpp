#include "engine/tokenizer/jinja/lexer.h"

#include <cctype>
#include <cstring>

#include "engine/tokenizer/jinja/errors.h"
#include "engine/tokenizer/unicode.h"

namespace specscope::jinja {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Jinja joins the template's lines with "\n" (so \r\n and \r become \n) and drops one trailing newline.
std::string normalize_newlines(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A string literal's body decoded as Jinja does (Python's "unicode-escape" codec).
std::string decode_escapes(const std::string& body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out += body[i];
      continue;
    }
    const char e = body[++i];
    switch (e) {
      case '\n': break;  // line continuation
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': case 'u': case 'U': {
        const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        char32_t cp = 0;
        bool ok = true;
        for (size_t k = 1; ok && k <= n; ++k) {
          if (i + k >= body.size() || hex_value(body[i + k]) < 0) ok = false;
          else cp = cp * 16 + char32_t(hex_value(body[i + k]));
        }
        if (!ok || cp > 0x10FFFF) {
          out += '\\';
          out += e;
          break;
        }
        unicode::append_utf8(out, cp);
        i += n;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          char32_t cp = char32_t(e - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
            cp = cp * 8 + char32_t(body[++i] - '0');
          unicode::append_utf8(out, cp);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) : s_(normalize_newlines(source)) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < s_.size()) {
      const size_t start = find_tag(pos_);
      std::string text = s_.substr(pos_, (start == std::string::npos ? s_.size() : start) - pos_);
      if (start == std::string::npos) {
        emit_text(text);
        break;
      }
      const char kind = s_[start + 1];  // '{', '%' or '#'
      size_t after = start + 2;
      const char sign = after < s_.size() && (s_[after] == '-' || s_[after] == '+') ? s_[after] : 0;
      if (sign == '-') {
        size_t e = text.size();
        while (e > 0 && is_ws(text[e - 1])) --e;
        text.resize(e);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: a block or comment tag with only blanks before it on its line takes them away.
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && l_pos < text.size()) {
          bool blank = true;
          for (size_t k = l_pos; k < text.size(); ++k) blank = blank && is_ws(text[k]);
          if (blank) text.resize(l_pos);
        }
      }
      emit_text(text);
      line_ += count_newlines(pos_, start);
      if (sign) ++after;
      pos_ = after;
      if (kind == '#') line_starting = comment();
      else line_starting = tag(kind == '{');
    }
    tokens_.push_back({Token::Type::End, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = s_.find('{', from); i != std::string::npos && i + 1 < s_.size(); i = s_.find('{', i + 1))
      if (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#') return i;
    return std::string::npos;
  }

  int count_newlines(size_t from, size_t to) const {
    int n = 0;
    for (size_t i = from; i < to && i < s_.size(); ++i) n += s_[i] == '\n';
    return n;
  }

  void emit_text(const std::string& text) {
    if (!text.empty()) tokens_.push_back({Token::Type::Text, text, line_});
  }

  // After the closing delimiter: `-` strips all following whitespace, else (blocks and comments) one newline.
  // Returns whether what was consumed ends a line (Jinja's line_starting, for lstrip_blocks).
  bool close(size_t end_at, size_t delim_len, bool minus, bool trim_newline) {
    pos_ = end_at + delim_len;
    bool ended_line = false;
    if (minus) {
      const size_t from = pos_;
      while (pos_ < s_.size() && is_ws(s_[pos_])) ++pos_;
      ended_line = pos_ > from && s_[pos_ - 1] == '\n';
      line_ += count_newlines(from, pos_);
    } else if (trim_newline && pos_ < s_.size() && s_[pos_] == '\n') {
      ++pos_;
      ++line_;
      ended_line = true;
    }
    return ended_line;
  }

  bool comment() {
    const size_t end = s_.find("#}", pos_);
    if (end == std::string::npos) throw SyntaxError(line_, "missing end of comment tag");
    const bool minus = end > pos_ && s_[end - 1] == '-';
    line_ += count_newlines(pos_, end);
    return close(end, 2, minus, true);
  }

  bool tag(bool variable) {
    const int begin_line = line_;
    depth_ = 0;
    tokens_.push_back({variable ? Token::Type::VarBegin : Token::Type::BlockBegin, "", line_});
    const char closing = variable ? '}' : '%';
    for (;;) {
      while (pos_ < s_.size() && is_ws(s_[pos_])) {
        line_ += s_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= s_.size())
        throw SyntaxError(begin_line, std::string("unexpected end of template: missing '") + closing + "}'");
      // The end delimiter, possibly with a '-' or '+' whitespace-control sign right before it; only where the
      // brackets are balanced, so `{{ {'a': {'b': 1}} }}` closes its dicts first (as Jinja's lexer does).
      for (const char sign : {'-', '+', '\0'}) {
        if (depth_ > 0) break;
        const size_t at = pos_ + (sign ? 1 : 0);
        if (sign && s_[pos_] != sign) continue;
        if (at + 1 < s_.size() && s_[at] == closing && s_[at + 1] == '}') {
          tokens_.push_back({variable ? Token::Type::VarEnd : Token::Type::BlockEnd, "", line_});
          return close(at, 2, sign == '-', !variable && sign != '+');
        }
      }
      expression_token();
    }
  }

  void expression_token() {
    const char c = s_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = pos_;
      while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
      tokens_.push_back({Token::Type::Name, s_.substr(pos_, e - pos_), line_});
      pos_ = e;
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      number();
      return;
    }
    if (c == '\'' || c == '"') {
      size_t e = pos_ + 1;
      while (e < s_.size() && s_[e] != c) e += s_[e] == '\\' ? 2 : 1;
      if (e >= s_.size()) throw SyntaxError(line_, "unexpected end of string");
      const std::string body = s_.substr(pos_ + 1, e - pos_ - 1);
      tokens_.push_back({Token::Type::String, decode_escapes(body), line_});
      line_ += count_newlines(pos_, e);
      pos_ = e + 1;
      return;
    }
    static const char* kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(",
                                 ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};
    for (const char* op : kOps) {
      const size_t n = std::strlen(op);
      if (s_.compare(pos_, n, op) == 0) {
        if (n == 1 && (*op == '(' || *op == '[' || *op == '{')) ++depth_;
        if (n == 1 && (*op == ')' || *op == ']' || *op == '}') && depth_ > 0) --depth_;
        tokens_.push_back({Token::Type::Op, op, line_});
        pos_ += n;
        return;
      }
    }
    throw SyntaxError(line_, std::string("unexpected char '") + c + "'");
  }

  void number() {
    auto digits = [&](size_t e) {
      while (e < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[e])) ||
                               (s_[e] == '_' && e + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e + 1])))))
        ++e;
      return e;
    };
    size_t e = digits(pos_);
    bool is_float = false;
    if (e + 1 < s_.size() && s_[e] == '.' && std::isdigit(static_cast<unsigned char>(s_[e + 1]))) {
      e = digits(e + 1);
      is_float = true;
    }
    if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t x = e + 1;
      if (x < s_.size() && (s_[x] == '+' || s_[x] == '-')) ++x;
      if (x < s_.size() && std::isdigit(static_cast<unsigned char>(s_[x]))) {
        e = digits(x);
        is_float = true;
      }
    }
    std::string spelling;
    for (size_t k = pos_; k < e; ++k)
      if (s_[k] != '_') spelling += s_[k];
    tokens_.push_back({is_float ? Token::Type::Float : Token::Type::Int, spelling, line_});
    pos_ = e;
  }

  std::string s_;
  size_t pos_ = 0;
  int line_ = 1;
  int depth_ = 0;  // open brackets inside the current tag
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(source).run(); }

}  // namespace specscope::jinja
