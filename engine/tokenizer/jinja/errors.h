#pragma once
// What a template can do wrong. SyntaxError: it does not parse (line, what). Raised: it called
// raise_exception(message), the template's own refusal, passed on word for word. RenderError: it did something
// Jinja would refuse while rendering (an undefined name used, wrong types, a limit reached).
#include <stdexcept>
#include <string>

namespace specscope::jinja {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

class SyntaxError : public Error {
 public:
  SyntaxError(int line, const std::string& problem)
      : Error("line " + std::to_string(line) + ": " + problem), line_(line), problem_(problem) {}
  int line() const { return line_; }
  const std::string& problem() const { return problem_; }

 private:
  int line_;
  std::string problem_;
};

class Raised : public Error {
 public:
  explicit Raised(const std::string& message) : Error(message) {}
};

class RenderError : public Error {
 public:
  RenderError(int line, const std::string& problem)
      : Error("line " + std::to_string(line) + ": " + problem), line_(line), problem_(problem) {}
  int line() const { return line_; }
  const std::string& problem() const { return problem_; }

 private:
  int line_;
  std::string problem_;
};

}  // namespace specscope::jinja
