#pragma once
// Shared helpers for the GoogleTest suite.
#include <nlohmann/json.hpp>
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
// The JSON document in a command's merged output: from the first line that opens an object (progress lines on
// stderr come first) to the end of that value. Null when there is none or it does not parse.
nlohmann::json json_in_output(const std::string& out);

}  // namespace specscope::test

namespace specscope::test {

// Upper tail P(X >= stat) of the chi-square distribution with `dof` degrees of freedom.
double chi_square_p_value(double stat, int dof);
// Pearson's test of observed counts against expected probabilities (cells with expected count < 5 are
// pooled into one). Returns the p-value; `dof_out` receives the degrees of freedom used.
double chi_square_test(const std::vector<long>& observed, const std::vector<double>& probs, int* dof_out = nullptr);

}  // namespace specscope::test
