#include "runs/cache_file.h"

#include <unistd.h>

#include <atomic>
#include <fstream>

namespace specscope::runs {

namespace fs = std::filesystem;

bool write_cache_file(const fs::path& file, const std::string& text) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  // Unique per process and per call, so concurrent writers (threads or processes) never share a temporary file.
  static std::atomic<unsigned> counter{0};
  fs::path tmp = file;
  tmp += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace specscope::runs
