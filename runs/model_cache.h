#pragma once
// Target and drafter models by path, each loaded once per cache and shared by every lane that uses it (a race
// on base and streaming loads two targets, however many lanes). Used from one thread at a time.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/backend.h"

namespace specscope {
class Model;
}

namespace specscope::runs {

class ModelCache {
 public:
  // Called before a load starts (done = false) and after it ends (done = true).
  using Progress = std::function<void(const std::string& path, bool done)>;
  // Called during a load with the weight bytes bound and checked so far (LoadOptions::progress).
  using LoadProgress = std::function<void(const std::string& path, uint64_t done, uint64_t total)>;
  // Throws InputError naming the path when the model cannot be loaded. `backend`: where its runs are asked to run;
  // when that is the CPU (backend_for: also a model only the CPU computes under auto on a GPU host), the CPU's copy
  // of the weights in huge pages (Model::resident_weights) is made now, as the second half of the load's progress
  // (the loader's bytes count as the first half, the copy's as the second), or, when the load alone was expected, as
  // a progress of its own after it. Without `backend` the copy is left to the first CPU context.
  std::shared_ptr<const Model> get(const std::string& path, const Progress& progress = {},
                                   const LoadProgress& load_progress = {},
                                   std::optional<Backend> backend = std::nullopt);
  bool has(const std::string& path) const;
  // Frees every model not in `paths` (a new job on other models should not hold the old weights).
  void keep_only(const std::vector<std::string>& paths);
  size_t size() const { return models_.size(); }

 private:
  std::map<std::string, std::shared_ptr<const Model>> models_;  // by canonical path
};

}  // namespace specscope::runs
