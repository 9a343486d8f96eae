#include "tests/test_support.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>

namespace specscope::test {

std::string fixture(const std::string& rel) { return std::string(SPECSCOPE_FIXTURES) + "/" + rel; }

CommandResult run_cli(const std::string& args) {
  std::string cmd = std::string(SPECSCOPE_CLI) + " " + args + " 2>&1";
  CommandResult r{-1, {}};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

}  // namespace specscope::test
