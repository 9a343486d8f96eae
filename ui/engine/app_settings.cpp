#include "ui/engine/app_settings.h"

#include <filesystem>
#include <optional>

#include "engine/model/family_manifest.h"
#include "engine/util/error.h"

namespace specscope::ui {

namespace {

std::optional<FamilyManifest> manifest_for(const std::string& target) {
  try {
    return FamilyManifest::find_for(target);
  } catch (const InputError&) {
    return std::nullopt;  // a malformed manifest is reported when a lane is resolved, not while filling forms
  }
}

}  // namespace

FamilyPaths FamilyPaths::for_target(const std::string& target) {
  const auto manifest = manifest_for(target);
  auto pick = [&](const char* method, MethodNeed need, const char* sibling) {
    if (const FamilyEntry* e = manifest ? manifest->entry(method) : nullptr; e && !e->path_for(need).empty())
      return QString::fromStdString(e->path_for(need));
    // No manifest (or it names none): the shipped family's layout, folders next to the target.
    const auto p = std::filesystem::path(target).lexically_normal().parent_path() / sibling;
    std::error_code ec;
    return std::filesystem::exists(p, ec) ? QString::fromStdString(p.string()) : QString();
  };
  FamilyPaths f;
  f.draft = pick("sps", MethodNeed::DraftModel, "draft");
  f.eagle_head = pick("eagle2", MethodNeed::EagleHead, "eagle1");
  f.eagle3_head = pick("eagle3", MethodNeed::Eagle3Head, "eagle3");
  f.medusa_head = pick("medusa", MethodNeed::MedusaHeads, "medusa");
  f.streaming = pick("streaming", MethodNeed::StreamingTarget, "streaming");
  return f;
}

QString& AppSettings::path_for(MethodNeed need) {
  static QString none;
  switch (need) {
    case MethodNeed::DraftModel: return draft_path;
    case MethodNeed::EagleHead: return eagle_head;
    case MethodNeed::Eagle3Head: return eagle3_head;
    case MethodNeed::MedusaHeads: return medusa_head;
    case MethodNeed::StreamingTarget: return streaming_path;
    case MethodNeed::Nothing: break;
  }
  none.clear();
  return none;
}

QString AppSettings::path_for(MethodNeed need) const { return const_cast<AppSettings*>(this)->path_for(need); }

runs::LaneRequest AppSettings::with_settings(runs::LaneRequest r) const {
  const MethodInfo* info = find_method_info(r.method);
  if (!info) return r;  // resolve() names the unknown method
  const auto manifest = manifest_for(model_path.toStdString());
  const FamilyEntry* fam = manifest ? manifest->entry(r.method) : nullptr;
  const std::string key = need_key(info->needs);
  const std::string path = path_for(info->needs).toStdString();
  if (!key.empty() && !r.keys.count(key) && !path.empty()) {
    const std::string from_family = fam ? fam->path_for(info->needs) : std::string();
    if (from_family.empty() || !same_path(from_family, path)) r.keys[key] = path;
  }
  if (auto it = method_options.find(r.method); it != method_options.end())
    for (const auto& [k, v] : it->second) {
      if (r.keys.count(k)) continue;
      if (fam)
        if (auto f = fam->options.find(k); f != fam->options.end() && f->second == v) continue;
      r.keys[k] = v;
    }
  return r;
}

std::vector<runs::Lane> AppSettings::resolve(const std::vector<runs::LaneRequest>& requests) const {
  std::vector<runs::LaneRequest> full;
  for (const auto& r : requests) full.push_back(with_settings(r));
  runs::LaneDefaults d;
  d.target = model_path.toStdString();
  d.use_manifest = true;
  return runs::resolve_lanes(full, d);
}

}  // namespace specscope::ui
