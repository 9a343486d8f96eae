#pragma once
// A small "--flag value" argument reader: every flag a subcommand does not read is an error (exit 2).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace specscope::cli {

class Args {
 public:
  Args(int argc, char** argv);
  std::optional<std::string> get(const std::string& flag);  // --flag VALUE
  std::string get_or(const std::string& flag, const std::string& def);
  int get_int(const std::string& flag, int def);
  double get_double(const std::string& flag, double def);
  bool has(const std::string& flag);  // boolean --flag
  std::vector<std::string> get_all(const std::string& flag);  // a repeatable --flag VALUE, in order
  std::vector<std::string> positional() const { return positional_; }
  // Throws InputError for any flag given but never read.
  void finish() const;

 private:
  std::map<std::string, std::optional<std::string>> flags_;  // the last value of each flag
  std::map<std::string, std::vector<std::string>> all_;     // every value, for repeatable flags
  std::vector<std::string> positional_;
  std::set<std::string> used_;
};

}  // namespace specscope::cli
