// LM Studio's store: <root>/<publisher>/<repo>/ holding .gguf files (or, for MLX downloads, a Hugging Face
// folder). Vision projectors (mmproj-*.gguf) sit beside the models they serve and are not models themselves.
#include <filesystem>

#include "engine/discovery/stores.h"

namespace specscope::discovery {

namespace fs = std::filesystem;

namespace {

bool is_projector(const std::string& file) { return file.rfind("mmproj", 0) == 0; }

bool ends_with_gguf(const std::string& name) {
  return name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0;
}

}  // namespace

void scan_lmstudio(const std::string& root, Discovery& out) {
  std::error_code ec;
  for (const auto& publisher : list_folder(root, Source::LmStudio, out)) {
    const fs::path p = fs::path(root) / publisher;
    if (!fs::is_directory(p, ec) || publisher.rfind('.', 0) == 0) continue;  // .internal and other bookkeeping
    for (const auto& repo : list_folder(p.string(), Source::LmStudio, out)) {
      const fs::path r = p / repo;
      if (!fs::is_directory(r, ec)) continue;
      const std::string id = publisher + "/" + repo;
      if (fs::exists(r / "config.json", ec)) {
        Found f;
        f.source = Source::LmStudio;
        f.root = root;
        f.name = id;
        f.spec = "lmstudio:" + id;
        if (probe_into(r.string(), Source::LmStudio, f, out)) out.models.push_back(std::move(f));
        continue;
      }
      for (const auto& file : list_folder(r.string(), Source::LmStudio, out)) {
        if (!ends_with_gguf(file) || is_projector(file)) continue;
        Found f;
        f.source = Source::LmStudio;
        f.root = root;
        f.name = id + "/" + file;
        f.spec = "lmstudio:" + f.name;
        if (probe_into((r / file).string(), Source::LmStudio, f, out)) out.models.push_back(std::move(f));
      }
    }
  }
}

}  // namespace specscope::discovery
