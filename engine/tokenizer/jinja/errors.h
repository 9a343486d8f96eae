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

// An error at a line of the template: what() is "line N: problem".
class LocatedError : public Error {
 public:
  LocatedError(int line, const std::string& problem)
      : Error("line " + std::to_string(line) + ": " + problem), line_(line), problem_(problem) {}
  int line() const { return line_; }
  const std::string& problem() const { return problem_; }

 private:
  int line_;
  std::string problem_;
};

class SyntaxError : public LocatedError {
 public:
  using LocatedError::LocatedError;
};

class Raised : public Error {
 public:
  explicit Raised(const std::string& message) : Error(message) {}
};

class RenderError : public LocatedError {
 public:
  using LocatedError::LocatedError;
};

}  // namespace specscope::jinja
