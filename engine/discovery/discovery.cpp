#include "engine/discovery/discovery.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "engine/discovery/stores.h"
#include "engine/model/family_manifest.h"
#include "engine/util/error.h"

namespace specscope::discovery {

namespace fs = std::filesystem;

std::vector<std::string> list_folder(const std::string& dir, Source source, Discovery& out) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    out.problems.push_back({source, dir, "cannot read this folder (" + ec.message() + ")"});
    return names;
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) {
      out.problems.push_back({source, dir, "cannot read this folder (" + ec.message() + ")"});
      break;
    }
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool probe_into(const std::string& path, Source source, Found& found, Discovery& out) {
  try {
    found.facts = probe_model(path);
    found.path = path;
    return true;
  } catch (const InputError& e) {
    out.problems.push_back({source, e.where().empty() ? path : e.where(), e.problem()});
    return false;
  }
}

std::vector<const Pairing*> Discovery::drafters_of(size_t target) const {
  std::vector<const Pairing*> out;
  for (const auto& p : pairings)
    if (p.target == target) out.push_back(&p);
  return out;
}

const Found* Discovery::find_path(const std::string& path, size_t* index) const {
  for (size_t i = 0; i < models.size(); ++i)
    if (same_path(models[i].path, path)) {
      if (index) *index = i;
      return &models[i];
    }
  return nullptr;
}

Discovery discover(const StoreRoots& roots) {
  const auto t0 = std::chrono::steady_clock::now();
  Discovery d;
  d.roots = roots;
  std::error_code ec;
  // A root that does not exist is the normal case (that tool is not installed): nothing to say.
  for (const auto& r : roots.ollama)
    if (fs::exists(r, ec)) scan_ollama(r, d);
  for (const auto& r : roots.lmstudio)
    if (fs::exists(r, ec)) scan_lmstudio(r, d);
  for (const auto& r : roots.hf)
    if (fs::exists(r, ec)) scan_hf_cache(r, d);
  pair_drafters(d);
  spdlog::debug("discovery: {} models, {} problems, {} pairings in {:.3f}s", d.models.size(), d.problems.size(),
                d.pairings.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return d;
}

}  // namespace specscope::discovery
