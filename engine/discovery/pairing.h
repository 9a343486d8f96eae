#pragma once
// Which drafter fits which target (discovery.h's pairings), decided from probed facts alone:
//  - EAGLE-1/2, EAGLE-3 and Medusa heads: by the head config's base model name where it has one (Medusa's
//    base_model_name_or_path; an EAGLE config's base_model where present) and it names a target that was found;
//    otherwise by the architecture family, hidden size and vocabulary. Either way the sizes the head loaders
//    check must fit (hidden size, or EAGLE-3's target hidden size; the vocabulary; EAGLE-3's three tapped
//    layers), so a pairing offered is one that loads: a head named for a target of another hidden size is
//    refused, never offered, and the head says why (Found::pairing_note).
//  - SpS drafters: any model that loads, has fewer parameters than the target, and the same tokenizer
//    (tokenizer_fingerprint.h).
#include <string>

#include "engine/discovery/discovery.h"

namespace specscope::discovery {

// Why `head` cannot serve `target` (empty: it can). `by_name`: the pairing comes from the head's base model
// name, so the architecture family is not compared (heads name their own architecture "llama" whatever the
// target's is).
std::string head_misfit(const ModelFacts& head, const ModelFacts& target, bool by_name);
// Whether `base` (a config's base model name: a hub id, a path, or a bare name) names `target`.
bool names_target(const std::string& base, const Found& target);

}  // namespace specscope::discovery
