#pragma once
// A family manifest (family.json) names, for one target model, the drafter of every method and the target of
// methods that need their own, so that `run --method X` and `compare --methods ...` need no drafter flags:
//
//   {"specscope_family": 1,
//    "target": "base",
//    "methods": {"sps": {"draft": "draft"}, "eagle2": {"head": "eagle1"}, "streaming": {"model": "streaming"},
//                "eagle3": {"head": "eagle3", "options": {"total-tokens": 60}}}}
//
// A draft-model entry may list other drafters beside its own, "sps": {"draft": "draft", "alternatives":
// ["draft-small"]}: where tree=auto sizes the lane (runs/tree_tuner.h), it calibrates each drafter with each gamma and
// runs the pair with the most expected tokens/s on this device (a smaller drafter that is accepted less can still
// win where every drafted token's forward costs, as on a CPU); elsewhere the entry's own drafter runs.
//
// Any method's entry may also name "model", its own target (a fine-tune trained together with its drafter, as
// Medusa-2 trains the base with its heads: "medusa": {"model": "medusa2", "head": "medusa2/heads"}); its runs are
// then checked against vanilla on that target.
//
// Paths are relative to the manifest's folder. It is looked for next to the target (inside a model folder, or
// beside it: assets/models/family.json serves assets/models/base) and applies only to the target it names.
// The format is documented in docs/family-manifest.md.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/methods/method_registry.h"

namespace specscope {

struct FamilyEntry {
  std::string draft, head, model;              // absolute paths; empty when not given
  std::vector<std::string> alternatives;       // other drafters of the draft's kind, absolute (tree=auto chooses)
  std::map<std::string, std::string> options;  // method options (registry keys) the family recommends
  // The path given for what `need` asks for (draft, head or model); empty for Nothing or when not given.
  const std::string& path_for(MethodNeed need) const;
};

struct FamilyManifest {
  std::string file;    // the manifest's own path
  std::string target;  // absolute
  std::map<std::string, FamilyEntry> methods;

  // Throws InputError naming `file` for malformed JSON, a missing target, an unknown method or key, or a key
  // that does not fit the method (a head for sps, a draft for eagle2...).
  static FamilyManifest parse(const std::string& json_text, const std::string& file);
  // The manifest that applies to `target_path`, if any: family.json inside it, then beside it, whichever names
  // it as its target. A manifest that exists but is malformed is an InputError, never silently skipped.
  static std::optional<FamilyManifest> find_for(const std::string& target_path);

  const FamilyEntry* entry(const std::string& method) const;
  // Every registry method this family can run: those needing nothing, and those it names a drafter or target for.
  std::vector<std::string> servable_methods() const;
};

// Whether two paths name the same file or folder (after resolving "..", symlinks and relative parts).
bool same_path(const std::string& a, const std::string& b);

}  // namespace specscope
