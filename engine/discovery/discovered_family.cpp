#include "engine/discovery/discovered_family.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <mutex>

#include "engine/methods/method_registry.h"

namespace specscope::discovery {

FamilyManifest family_from_discovery(const Discovery& d, size_t target) {
  FamilyManifest m;
  m.file = "model discovery (" + d.models[target].root + ")";
  m.target = d.models[target].path;
  for (const Pairing* p : d.drafters_of(target))
    for (const auto& method : p->methods) {
      const MethodInfo* info = find_method_info(method);
      if (!info) continue;
      const std::string& path = d.models[p->drafter].path;
      if (auto it = m.methods.find(method); it != m.methods.end()) {
        // An earlier (preferred) drafter already serves it; another draft model is an alternative tree=auto may
        // choose on the device (family_manifest.h), another head is not offered.
        if (info->needs == MethodNeed::DraftModel) it->second.alternatives.push_back(path);
        continue;
      }
      FamilyEntry e;
      (info->needs == MethodNeed::DraftModel ? e.draft : e.head) = path;
      m.methods[method] = std::move(e);
    }
  return m;
}

namespace {

// One command asks for a target's family several times (the method list, then each lane); a scan probes every
// model in every store, so its result is reused for a few seconds. Long enough for one command, short enough that
// the app sees a model downloaded since.
std::shared_ptr<const Discovery> recent_discovery(const StoreRoots& roots) {
  static std::mutex mu;
  static std::shared_ptr<const Discovery> last;
  static std::chrono::steady_clock::time_point when;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu);
  const auto same_roots = [&](const StoreRoots& r) {
    return r.ollama == roots.ollama && r.lmstudio == roots.lmstudio && r.hf == roots.hf;
  };
  if (!last || !same_roots(last->roots) || now - when > std::chrono::seconds(5)) {
    last = std::make_shared<const Discovery>(discover(roots));
    when = now;
  }
  return last;
}

}  // namespace

std::optional<FamilyManifest> discovered_family(const std::string& target_path) {
  const StoreRoots roots = StoreRoots::from_environment();
  if (!roots.contains(target_path)) return std::nullopt;
  const std::shared_ptr<const Discovery> found = recent_discovery(roots);
  const Discovery& d = *found;
  size_t index = 0;
  if (!d.find_path(target_path, &index)) return std::nullopt;
  FamilyManifest m = family_from_discovery(d, index);
  for (const auto& [method, e] : m.methods)
    spdlog::info("{}: {} drafter {} (discovered)", d.models[index].spec, method, e.head.empty() ? e.draft : e.head);
  return m;
}

}  // namespace specscope::discovery
