#include "engine/discovery/hf_layout.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace specscope::discovery {

namespace fs = std::filesystem;

std::string repo_id_of_cache_folder(const std::string& folder) {
  const std::string prefix = "models--";
  if (folder.rfind(prefix, 0) != 0 || folder.size() == prefix.size()) return "";
  // Hub names cannot contain "--", so each one is a '/'.
  std::string id;
  for (size_t i = prefix.size(); i < folder.size(); ++i) {
    if (folder.compare(i, 2, "--") == 0) {
      id += '/';
      ++i;
    } else {
      id += folder[i];
    }
  }
  return id;
}

std::string cache_folder_of_repo_id(const std::string& repo_id) {
  std::string f = "models--";
  for (char c : repo_id) f += c == '/' ? std::string("--") : std::string(1, c);
  return f;
}

std::map<std::string, std::string> read_refs(const std::string& repo_folder) {
  std::map<std::string, std::string> out;
  const fs::path refs = fs::path(repo_folder) / "refs";
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(refs, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::ifstream in(it->path());
    std::string hash;
    if (!(in >> hash) || hash.size() < 7 || hash.size() > 64) continue;
    const std::string name = it->path().lexically_relative(refs).generic_string();
    auto [pos, inserted] = out.emplace(hash, name);
    if (!inserted && name == "main") pos->second = name;
  }
  return out;
}

std::vector<std::string> gguf_files_in(const std::string& snapshot) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(snapshot, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_directory(ec)) {
      if (it.depth() >= 1) it.disable_recursion_pending();  // a quantization folder, not deeper
      continue;
    }
    const std::string name = it->path().filename().string();
    if (it->path().extension() == ".gguf" && name.rfind("mmproj", 0) != 0 && it->is_regular_file(ec))
      out.push_back(it->path().lexically_relative(snapshot).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace specscope::discovery
