#include "engine/model/default_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "engine/util/error.h"

namespace specscope {
namespace fs = std::filesystem;

std::string default_model_path() {
  if (const char* env = std::getenv("SPECSCOPE_MODEL"); env && *env) return env;
  std::vector<fs::path> candidates;
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len > 0) {
    exe[len] = 0;
    candidates.push_back(fs::path(exe).parent_path().parent_path() / "share/specscope/models/base");
  }
  candidates.push_back(fs::path(SPECSCOPE_SOURCE_DIR) / "assets/models/base");
  for (auto& c : candidates)
    if (fs::exists(c / "config.json")) return c.string();
  throw InputError("--model", "not given, and no default model was found (looked in $SPECSCOPE_MODEL, " +
                                  candidates.back().string() + ")");
}

}  // namespace specscope
