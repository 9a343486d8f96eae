#include "app/cli/args.h"

#include <cstdlib>

#include "engine/util/error.h"

namespace specscope::cli {

// Flags that never take a value; every other --flag takes the next argument.
static const std::set<std::string> kBoolFlags = {"--json", "--chat", "--no-record", "--help", "--greedy",
                                                 "--skip-special", "--no-bos", "--lossy-typical", "--quiet",
                                                 "--follow", "--interleaved", "--contention"};

Args::Args(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) == 0) {
      auto eq = a.find('=');
      if (eq != std::string::npos) {
        flags_[a.substr(0, eq)] = a.substr(eq + 1);
        all_[a.substr(0, eq)].push_back(a.substr(eq + 1));
      } else if (kBoolFlags.count(a)) {
        flags_[a] = std::nullopt;
      } else {
        if (i + 1 >= argc) throw InputError(a, "needs a value");
        flags_[a] = std::string(argv[++i]);
        all_[a].push_back(argv[i]);
      }
    } else {
      positional_.push_back(a);
    }
  }
}

std::optional<std::string> Args::get(const std::string& flag) {
  used_.insert(flag);
  auto it = flags_.find(flag);
  if (it == flags_.end()) return std::nullopt;
  if (!it->second) throw InputError(flag, "needs a value");
  return it->second;
}

std::string Args::get_or(const std::string& flag, const std::string& def) { return get(flag).value_or(def); }

int Args::get_int(const std::string& flag, int def) {
  auto v = get(flag);
  if (!v) return def;
  char* end = nullptr;
  long x = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end) throw InputError(flag, "expected an integer, got '" + *v + "'");
  return int(x);
}

double Args::get_double(const std::string& flag, double def) {
  auto v = get(flag);
  if (!v) return def;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end) throw InputError(flag, "expected a number, got '" + *v + "'");
  return x;
}

std::vector<std::string> Args::get_all(const std::string& flag) {
  used_.insert(flag);
  if (flags_.count(flag) && !flags_.at(flag)) throw InputError(flag, "needs a value");
  auto it = all_.find(flag);
  return it == all_.end() ? std::vector<std::string>{} : it->second;
}

bool Args::has(const std::string& flag) {
  used_.insert(flag);
  return flags_.count(flag) > 0;
}

void Args::finish() const {
  for (auto& [k, v] : flags_)
    if (!used_.count(k)) throw InputError(k, "unknown option for this command");
}

}  // namespace specscope::cli
