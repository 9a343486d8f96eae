#include "engine/discovery/model_probe.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/discovery/probe_formats.h"
#include "engine/util/error.h"

namespace specscope::discovery {

namespace fs = std::filesystem;

const char* kind_name(ModelKind k) {
  switch (k) {
    case ModelKind::Model: return "model";
    case ModelKind::Eagle1Head: return "eagle1-head";
    case ModelKind::Eagle3Head: return "eagle3-head";
    case ModelKind::MedusaHead: return "medusa-head";
    case ModelKind::LoraAdapter: return "lora-adapter";
  }
  return "?";
}

std::string family_of(const std::string& model_type) {
  if (model_type == "mistral") return "llama";       // the same network
  if (model_type == "gemma3_text") return "gemma3";  // 270M/1B text checkpoints beside 4B-27B (and GGUF's name)
  if (model_type == "deepseek_v2" || model_type == "deepseek_v3") return "deepseek2";  // GGUF's name for both
  if (model_type == "olmo3") return "olmo2";  // one GGUF architecture, one tokenizer
  return model_type;
}

bool looks_like_gguf(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

ModelFacts probe_model(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    if (fs::is_symlink(fs::symlink_status(path, ec)))
      throw InputError(path, "a dangling link (its target " + fs::read_symlink(path, ec).string() + " is missing)");
    throw InputError(path, "no such file or directory");
  }
  if (fs::is_directory(st)) return probe_hf_folder(path);
  if (looks_like_gguf(path)) return probe_gguf(path);
  throw InputError(path, "neither a model folder nor a GGUF file");
}

}  // namespace specscope::discovery
