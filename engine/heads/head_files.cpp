#include "engine/heads/head_files.h"

#include <filesystem>

#include "engine/formats/torch_checkpoint.h"
#include "engine/util/error.h"

namespace specscope {
namespace fs = std::filesystem;

std::shared_ptr<TensorStore> open_head_weights(const std::string& dir, const std::vector<std::string>& names) {
  if (!fs::is_directory(dir)) throw InputError(dir, "expected a head directory (config.json + weights)");
  for (const auto& n : names) {
    fs::path p = fs::path(dir) / n;
    if (!fs::exists(p)) continue;
    auto store = std::make_shared<TensorStore>();
    if (p.extension() == ".safetensors") {
      store->add_file(MappedFile::open(p.string()));
    } else {
      auto file = MappedFile::open(p.string());
      store->add_tensors(file, load_torch_checkpoint(file));
    }
    return store;
  }
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw InputError(dir, "no weights found (looked for " + list + ")");
}

std::string read_head_config(const std::string& dir) {
  fs::path p = fs::path(dir) / "config.json";
  if (!fs::exists(p)) throw InputError(p.string(), "missing (a published head directory has config.json)");
  return read_text_file(p.string());
}

}  // namespace specscope
