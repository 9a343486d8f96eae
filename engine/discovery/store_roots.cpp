#include "engine/discovery/store_roots.h"

#include <cstdlib>
#include <filesystem>

namespace specscope::discovery {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string();
}

std::string home() { return env("HOME"); }

// `inner` is inside `root` when root's canonical form is a prefix of inner's, component by component.
bool is_inside(const fs::path& inner, const fs::path& root) {
  std::error_code ec1, ec2;
  const fs::path i = fs::weakly_canonical(inner, ec1), r = fs::weakly_canonical(root, ec2);
  if (ec1 || ec2 || r.empty()) return false;
  auto ii = i.begin();
  for (auto ri = r.begin(); ri != r.end(); ++ri, ++ii) {
    if (ri->empty()) continue;  // a trailing separator
    if (ii == i.end() || *ii != *ri) return false;
  }
  return true;
}

}  // namespace

const char* source_name(Source s) {
  switch (s) {
    case Source::Ollama: return "ollama";
    case Source::LmStudio: return "lmstudio";
    case Source::HfCache: return "hf";
  }
  return "?";
}

StoreRoots StoreRoots::from_environment() {
  StoreRoots r;
  const std::string h = home();
  if (const std::string o = env("OLLAMA_MODELS"); !o.empty()) {
    r.ollama.push_back(o);  // Ollama itself then looks nowhere else
  } else {
    if (!h.empty()) r.ollama.push_back(h + "/.ollama/models");
    std::error_code ec;
    const std::string service = "/usr/share/ollama/.ollama/models";
    if (fs::is_directory(service, ec) && (h.empty() || !is_inside(service, h + "/.ollama/models")))
      r.ollama.push_back(service);
  }
  if (!h.empty()) {
    r.lmstudio.push_back(h + "/.lmstudio/models");
    r.lmstudio.push_back(h + "/.cache/lm-studio/models");
  }
  if (std::string c = env("HF_HUB_CACHE"); !c.empty()) r.hf.push_back(c);
  else if (c = env("HUGGINGFACE_HUB_CACHE"); !c.empty()) r.hf.push_back(c);
  else if (c = env("HF_HOME"); !c.empty()) r.hf.push_back(c + "/hub");
  else if (c = env("XDG_CACHE_HOME"); !c.empty()) r.hf.push_back(c + "/huggingface/hub");
  else if (!h.empty()) r.hf.push_back(h + "/.cache/huggingface/hub");
  return r;
}

const std::vector<std::string>& StoreRoots::of(Source s) const {
  switch (s) {
    case Source::Ollama: return ollama;
    case Source::LmStudio: return lmstudio;
    case Source::HfCache: return hf;
  }
  return hf;
}

bool StoreRoots::contains(const std::string& path, Source* which) const {
  for (Source s : {Source::Ollama, Source::LmStudio, Source::HfCache})
    for (const auto& root : of(s))
      if (is_inside(path, root)) {
        if (which) *which = s;
        return true;
      }
  return false;
}

}  // namespace specscope::discovery
