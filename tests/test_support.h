#pragma once
// Shared helpers for the GoogleTest suite.
#include <string>
#include <vector>

namespace specscope::test {

std::string fixture(const std::string& rel);  // absolute path under tests/fixtures
struct CommandResult {
  int exit_code;
  std::string out;  // stdout and stderr together
};
// Runs specscope-cli with the given arguments (already shell-quoted as needed).
CommandResult run_cli(const std::string& args);

}  // namespace specscope::test
