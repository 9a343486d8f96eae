#include "app/cli/memory_check.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <optional>

#include "engine/discovery/memory_estimate.h"
#include "engine/util/error.h"

namespace specscope::cli {

namespace {

using discovery::MemoryNeed;
using discovery::ModelFacts;

// Probed facts by path; a model that cannot be probed is left to its loader, which says what is wrong with it.
class FactsCache {
 public:
  const ModelFacts* get(const std::string& path) {
    if (path.empty()) return nullptr;
    auto it = facts_.find(path);
    if (it == facts_.end()) {
      std::optional<ModelFacts> f;
      try {
        f = discovery::probe_model(path);
      } catch (const InputError& e) {
        spdlog::debug("memory check: skipping {} ({})", path, e.what());
      }
      it = facts_.emplace(path, f).first;
    }
    return it->second ? &*it->second : nullptr;
  }

 private:
  std::map<std::string, std::optional<ModelFacts>> facts_;
};

void refuse_if_short(const MemoryNeed& need, int n_ctx, const std::string& where) {
  const auto available = discovery::mem_available_bytes();
  if (!available) return;  // not Linux: nothing to compare with
  spdlog::info("memory check: weights {} + KV cache {} against {} available", discovery::human_bytes(need.weights),
               discovery::human_bytes(need.kv_cache), discovery::human_bytes(*available));
  const std::string shortfall = discovery::memory_shortfall(need, *available, n_ctx);
  if (!shortfall.empty())
    throw InputError(where, shortfall + "; choose a smaller or more quantized model, or a shorter --context");
}

}  // namespace

void check_job_memory(const runs::Job& job) {
  if (job.lanes.empty()) return;
  const bool on_cpu = resolve_backend(job.backend) == Backend::Cpu;
  FactsCache facts;
  MemoryNeed need;
  // Every distinct target stays loaded for the whole job (runs::ModelCache).
  std::vector<std::string> targets;
  for (const auto& lane : job.lanes)
    if (std::find(targets.begin(), targets.end(), lane.target) == targets.end()) targets.push_back(lane.target);
  for (const auto& t : targets)
    if (const ModelFacts* f = facts.get(t)) need += discovery::model_memory(*f, job.n_ctx, false);
  // Per lane: its target's context, its drafter's weights, and a draft model's own CPU context (sized to the
  // target's max_position_embeddings, as DraftModelMethod allocates it). Sequential lanes hold one at a time;
  // interleaved lanes (and each target's reference run) all at once.
  std::vector<MemoryNeed> lanes;
  for (const auto& lane : job.lanes) {
    MemoryNeed l;
    const ModelFacts* t = facts.get(lane.target);
    if (t && on_cpu) l.kv_cache += discovery::cpu_kv_cache_bytes(*t, job.n_ctx);
    if (const ModelFacts* d = facts.get(lane.method.draft_path))
      l += discovery::model_memory(*d, t ? t->max_context : 0, true);
    if (const ModelFacts* h = facts.get(lane.method.head_path)) l += discovery::model_memory(*h, 0, false);
    lanes.push_back(l);
  }
  if (job.schedule == runs::Schedule::Interleaved) {
    for (const auto& l : lanes) need += l;
    if (job.references && on_cpu)
      for (const auto& t : targets)
        if (const ModelFacts* f = facts.get(t)) need.kv_cache += discovery::cpu_kv_cache_bytes(*f, job.n_ctx);
  } else {
    need += *std::max_element(lanes.begin(), lanes.end(),
                              [](const MemoryNeed& a, const MemoryNeed& b) { return a.total() < b.total(); });
  }
  const ModelFacts* first = facts.get(job.lanes.front().target);
  const int n_ctx = job.n_ctx > 0 ? job.n_ctx : first ? discovery::default_context(first->max_context) : 0;
  refuse_if_short(need, n_ctx, job.lanes.front().target);
}

void check_model_memory(const std::string& path, int n_ctx, Backend backend) {
  FactsCache facts;
  const ModelFacts* f = facts.get(path);
  if (!f) return;
  const bool on_cpu = resolve_backend(backend) == Backend::Cpu;
  refuse_if_short(discovery::model_memory(*f, n_ctx, on_cpu), n_ctx > 0 ? n_ctx : discovery::default_context(f->max_context),
                  path);
}

}  // namespace specscope::cli
