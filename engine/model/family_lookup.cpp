// Which family applies to a target: a family.json inside or beside it that names it, else the drafters model discovery
// found beside it in another tool's store (family_manifest.h).
#include <filesystem>

#include "engine/discovery/discovered_family.h"
#include "engine/model/family_manifest.h"
#include "engine/util/mapped_file.h"

namespace specscope {

namespace fs = std::filesystem;

std::optional<FamilyManifest> FamilyManifest::find_for(const std::string& target_path) {
  std::error_code ec;
  const fs::path target(target_path);
  std::vector<fs::path> candidates;
  if (fs::is_directory(target, ec)) candidates.push_back(target / "family.json");
  candidates.push_back(target.lexically_normal().parent_path() / "family.json");
  for (const auto& c : candidates) {
    if (!fs::is_regular_file(c, ec)) continue;
    FamilyManifest m = parse(read_text_file(c.string()), c.string());
    if (same_path(m.target, target_path)) return m;
  }
  // A target in another tool's model store (Ollama, LM Studio, the hub cache): the drafters found beside it.
  return discovery::discovered_family(target_path);
}

}  // namespace specscope
