#pragma once
// Errors the engine reports to its callers. InputError is "the user gave us something bad" (a file, a flag,
// a prompt): tools print its one-line message and exit with code 2. Anything else is a bug.
#include <stdexcept>
#include <string>

namespace specscope {

class InputError : public std::runtime_error {
 public:
  InputError(const std::string& where, const std::string& problem)
      : std::runtime_error(where.empty() ? problem : where + ": " + problem), where_(where), problem_(problem) {}
  const std::string& where() const { return where_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string where_;
  std::string problem_;
};

// Checks a condition on user-supplied data; throws InputError naming the file (or flag) when it fails.
#define SPEC_INPUT_CHECK(cond, where, problem)                                \
  do {                                                                        \
    if (!(cond)) throw ::specscope::InputError((where), (problem));           \
  } while (0)

}  // namespace specscope
