#pragma once
// What Settings holds (paths, per-method options, sampling, backend, store) and how it becomes lanes. Lanes are
// resolved by runs::resolve_lanes, the CLI's resolver, so the app and the CLI agree on precedence: a lane's own
// keys, then Settings, then the family manifest next to the target (assets/models/family.json for the shipped
// base, which is how a streaming lane gets assets/models/streaming as its target with no configuration).
#include <QString>
#include <map>
#include <string>
#include <vector>

#include "engine/methods/method_registry.h"
#include "engine/sampling/sampler.h"
#include "runs/job.h"
#include "runs/lane_resolver.h"

namespace specscope::ui {

// The drafter and streaming-target paths of one target's family: from its family.json, else the sibling
// folders the shipped family uses (draft, eagle1, eagle3, medusa, streaming) where they exist.
struct FamilyPaths {
  QString draft, eagle_head, eagle3_head, medusa_head, streaming;
  static FamilyPaths for_target(const std::string& target);
};

struct AppSettings {
  QString model_path, draft_path, eagle_head, eagle3_head, medusa_head, streaming_path;
  QString method = "sps";
  std::map<std::string, std::map<std::string, std::string>> method_options;  // per method name
  SamplingParams sampling;
  int max_tokens = 256;
  QString system_prompt;  // the chat's system message, through the model's chat template ("" = none)
  // Extra chat-template variables, a JSON object ({"enable_thinking": false} for Qwen3; "" = none); read by
  // runs::parse_template_kwargs when a job starts, so a malformed one is that job's error.
  QString template_kwargs;
  bool record = true;
  QString session_db;
  bool dark = false;
  QString backend = "auto";  // auto | cpu | cuda (engine/model/backend.h)

  // The path Settings holds for what `need` asks for (a draft model, a head, a streaming target); "" for Nothing.
  QString path_for(MethodNeed need) const;
  QString& path_for(MethodNeed need);
  // The request with what Settings holds filled in under the lane's own keys. Only values that differ from the
  // family manifest are added: the manifest already supplies the rest, and keys the user did not type would
  // otherwise show up in lane labels.
  runs::LaneRequest with_settings(runs::LaneRequest request) const;
  // Throws InputError naming the lane ("lane 3 (streaming): needs ...").
  std::vector<runs::Lane> resolve(const std::vector<runs::LaneRequest>& requests) const;
  runs::Lane resolve_one(const std::string& method) const { return resolve({{method, {}, method}}).front(); }
};

}  // namespace specscope::ui
