#include "runs/cache_file.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <vector>

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

std::string files_stamp(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return {};
  std::vector<fs::path> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file(ec)) files.push_back(e.path());
  } else {
    files.push_back(path);
  }
  std::sort(files.begin(), files.end());  // directory order is the file system's, not ours
  std::string stamp;
  for (const auto& f : files) {
    const auto size = fs::file_size(f, ec);
    const auto when = fs::last_write_time(f, ec).time_since_epoch().count();
    stamp += f.filename().string() + ":" + std::to_string(size) + ":" + std::to_string(when) + ";";
  }
  return stamp;
}

}  // namespace specscope::runs
