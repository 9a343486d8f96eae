#include "runs/model_cache.h"

#include <algorithm>
#include <filesystem>

#include "engine/model/model.h"

namespace specscope::runs {

namespace {
std::string key_of(const std::string& path) {
  std::error_code ec;
  auto c = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : c.string();
}
}  // namespace

std::shared_ptr<const Model> ModelCache::get(const std::string& path, const Progress& progress,
                                             const LoadProgress& load_progress) {
  const std::string key = key_of(path);
  if (auto it = models_.find(key); it != models_.end()) return it->second;
  if (progress) progress(path, false);
  LoadOptions opts;
  if (load_progress) opts.progress = [&](uint64_t done, uint64_t total) { load_progress(path, done, total); };
  auto model = Model::load(path, opts);
  models_[key] = model;
  if (progress) progress(path, true);
  return model;
}

bool ModelCache::has(const std::string& path) const { return models_.count(key_of(path)) > 0; }

void ModelCache::keep_only(const std::vector<std::string>& paths) {
  std::vector<std::string> keep;
  for (auto& p : paths) keep.push_back(key_of(p));
  for (auto it = models_.begin(); it != models_.end();)
    it = std::find(keep.begin(), keep.end(), it->first) == keep.end() ? models_.erase(it) : std::next(it);
}

}  // namespace specscope::runs
