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
                                             const LoadProgress& load_progress, std::optional<Backend> backend) {
  const std::string key = key_of(path);
  if (auto it = models_.find(key); it != models_.end()) return it->second;
  if (progress) progress(path, false);
  // Whether the copy's half of the progress is known before the load: the model's own config can still send it to
  // the CPU after (backend_for).
  const bool expect_cpu = backend && resolve_backend(*backend) == Backend::Cpu;
  LoadOptions opts;
  uint64_t load_total = 0;
  if (load_progress)
    opts.progress = [&](uint64_t done, uint64_t total) {
      load_total = total;
      load_progress(path, done, expect_cpu ? 2 * total : total);
    };
  auto model = Model::load(path, opts);
  if (backend && backend_for(*model, *backend) == Backend::Cpu)
    model->resident_weights([&](uint64_t done, uint64_t total) {
      if (!load_progress || total == 0) return;
      if (expect_cpu)
        load_progress(path, load_total + done * load_total / total, 2 * load_total);
      else
        load_progress(path, done, total);
    });
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
