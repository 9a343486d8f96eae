#include "runs/lane_resolver.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "engine/methods/method_registry.h"
#include "engine/model/family_manifest.h"
#include "engine/util/error.h"

namespace specscope::runs {

namespace {

bool is_path_key(const std::string& k) { return k == "model" || k == "head" || k == "draft"; }

// The label that tells lanes apart: the method, plus what makes this lane differ from the job's other lanes of
// the same method (its own keys as typed).
std::string lane_label(const LaneRequest& r, const std::vector<LaneRequest>& all) {
  const auto same = std::count_if(all.begin(), all.end(), [&](const LaneRequest& o) { return o.method == r.method; });
  if (same <= 1 || r.keys.empty()) return r.method;
  std::string s = r.method;
  for (const auto& [k, v] : r.keys) s += " " + k + "=" + v;
  return s;
}

}  // namespace

std::string lane_name(int index, const std::string& text) {
  return "lane " + std::to_string(index + 1) + " (" + text + ")";
}

LaneRequest parse_lane(const std::string& text) {
  LaneRequest r;
  r.text = text;
  const auto colon = text.find(':');
  r.method = text.substr(0, colon);
  if (r.method.empty()) throw InputError("--lane", "'" + text + "': expected METHOD[:key=value,...]");
  if (colon == std::string::npos) return r;
  std::stringstream ss(text.substr(colon + 1));
  std::string item, last_key;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      // A comma inside a value: branching=2,2,1.
      if (last_key.empty() || item.empty())
        throw InputError("--lane", "'" + text + "': '" + item + "' is not key=value");
      r.keys[last_key] += "," + item;
      continue;
    }
    const std::string key = item.substr(0, eq);
    if (key.empty()) throw InputError("--lane", "'" + text + "': a key is empty");
    if (r.keys.count(key)) throw InputError("--lane", "'" + text + "': key '" + key + "' given twice");
    r.keys[key] = item.substr(eq + 1);
    last_key = key;
  }
  return r;
}

std::vector<LaneRequest> parse_method_list(const std::string& list, const std::string& target) {
  std::vector<std::string> names;
  if (list == "all") {
    auto manifest = FamilyManifest::find_for(target);
    if (manifest) names = manifest->servable_methods();
    else
      for (const auto& m : method_registry())
        if (m.needs == MethodNeed::Nothing) names.push_back(m.name);
  } else {
    std::stringstream ss(list);
    for (std::string m; std::getline(ss, m, ',');)
      if (!m.empty()) names.push_back(m);
  }
  std::vector<LaneRequest> out;
  for (auto& n : names) out.push_back({n, {}, n});
  return out;
}

std::vector<Lane> resolve_lanes(const std::vector<LaneRequest>& requests, const LaneDefaults& d) {
  std::optional<FamilyManifest> manifest;
  if (d.use_manifest && !d.target.empty()) manifest = FamilyManifest::find_for(d.target);

  // A global option flag must be taken by at least one lane: a typo or an option of a method not in the run
  // is an error, not silently ignored.
  for (const auto& [key, value] : d.options) {
    bool taken = false;
    std::string methods;
    for (const auto& r : requests) {
      methods += (methods.empty() ? "" : ", ") + r.method;
      if (const MethodInfo* info = find_method_info(r.method); info && find_option(*info, key)) taken = true;
    }
    if (!taken) throw InputError("--" + key, "is not an option of any method in this run (" + methods + ")");
  }

  std::vector<Lane> lanes;
  for (size_t i = 0; i < requests.size(); ++i) {
    const LaneRequest& r = requests[i];
    const std::string where = lane_name(int(i), r.text);
    const MethodInfo* info = find_method_info(r.method);
    if (!info) {
      std::string all;
      for (auto& m : known_methods()) all += (all.empty() ? "" : ", ") + m;
      throw InputError(where, "unknown method '" + r.method + "' (available: " + all + ")");
    }
    const FamilyEntry* fam = manifest ? manifest->entry(r.method) : nullptr;
    Lane lane;
    lane.method.name = r.method;
    // Options: the family's recommendation, then the global flags, then the lane's own keys.
    if (fam) lane.method.options = fam->options;
    for (const auto& [k, v] : d.options)
      if (find_option(*info, k)) lane.method.options[k] = v;
    for (const auto& [k, v] : r.keys) {
      if (is_path_key(k)) continue;
      if (!find_option(*info, k)) {
        std::string takes = "model";
        if (*need_key(info->needs) && info->needs != MethodNeed::StreamingTarget) takes += std::string(", ") + need_key(info->needs);
        for (const auto& o : info->options) takes += ", " + o.key;
        throw InputError(where, "unknown key '" + k + "' (" + r.method + " takes " + takes + ")");
      }
      lane.method.options[k] = v;
    }
    // The target: the lane's model key, else the family's own target for this method, else the job's.
    const auto key = [&](const char* k) -> std::string {
      auto it = r.keys.find(k);
      return it == r.keys.end() ? std::string() : it->second;
    };
    // The family's own model for this method (Medusa-2's fine-tune) goes with the family's drafter: a drafter named
    // by the lane or a flag drafts for the job's target, as it would without the family.
    const std::string wants = need_key(info->needs);
    const bool drafter_named = (wants == "draft" && (!key("draft").empty() || !d.draft.empty())) ||
                               (wants == "head" && (!key("head").empty() || !d.head.empty()));
    lane.target = !key("model").empty()                               ? key("model")
                  : fam && !fam->model.empty() && !drafter_named ? fam->model
                                                                      : d.target;
    // The drafter.
    for (const char* k : {"head", "draft"})
      if (!key(k).empty() && wants != k)
        throw InputError(where, std::string("key '") + k + "' does not apply: " + r.method + " needs " +
                                    need_description(info->needs));
    if (wants == "draft") {
      lane.method.draft_path =
          !key("draft").empty() ? key("draft") : !d.draft.empty() ? d.draft : fam ? fam->path_for(info->needs) : "";
      if (lane.method.draft_path.empty())
        throw InputError(where, "needs a draft model: give draft=PATH, --draft PATH, or a family.json next to the "
                                "target that names one");
      // The family's other drafters, for tree=auto to choose among; a drafter the user named is the one that runs.
      if (key("draft").empty() && d.draft.empty() && fam) lane.method.draft_alternatives = fam->alternatives;
    } else if (wants == "head") {
      lane.method.head_path =
          !key("head").empty() ? key("head") : !d.head.empty() ? d.head : fam ? fam->path_for(info->needs) : "";
      if (lane.method.head_path.empty())
        throw InputError(where, std::string("needs ") + need_description(info->needs) +
                                    ": give head=PATH, --head PATH, or a family.json next to the target that names one");
    }
    lane.label = lane_label(r, requests);
    lanes.push_back(std::move(lane));
  }
  // Labels must tell lanes apart (two identical lanes are allowed: numbered).
  for (size_t i = 0; i < lanes.size(); ++i) {
    int dup = 0;
    for (size_t j = 0; j < i; ++j) dup += lanes[j].label == lanes[i].label;
    if (dup) lanes[i].label += " #" + std::to_string(dup + 1);
  }
  return lanes;
}

}  // namespace specscope::runs
