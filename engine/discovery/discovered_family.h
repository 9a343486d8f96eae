#pragma once
// The family manifest (engine/model/family_manifest.h) of a discovered target: when no family.json applies to a
// target that lies in a model store, FamilyManifest::find_for asks here, and each method's drafter is the first
// drafter discovery paired with that target (pairing.h's preference order). So `run --model hf:ORG/NAME --method
// eagle2` and `compare --methods all` need no drafter flags when the head is in a store too. Flags and lane keys
// still take precedence, as they do over a family.json.
#include <optional>
#include <string>

#include "engine/discovery/discovery.h"
#include "engine/model/family_manifest.h"

namespace specscope::discovery {

// The manifest built from `d`'s pairings for models[target].
FamilyManifest family_from_discovery(const Discovery& d, size_t target);
// For `target_path` inside one of the environment's store roots (discovery is not run for any other path):
// discover, find the target, and build its manifest; nullopt when the path is not a discovered model.
std::optional<FamilyManifest> discovered_family(const std::string& target_path);

}  // namespace specscope::discovery
