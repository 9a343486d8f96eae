#pragma once
// What the app's model picker lists, decided without Qt so that it can be tested: every discovered model (and the
// shipped family's base) as one row, grouped by where it was found, with its size, whether it can be chosen as the
// target (and why not: the loader would refuse it, it is a drafter, or its memory estimate does not fit), and the
// drafters that fit it, per role (EAGLE-1/2 head, EAGLE-3 head, Medusa heads, SpS draft model). The picker (ui/views/
// model_picker.h) only draws these rows and filters them with matches_query.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/discovery/discovery.h"
#include "engine/methods/method_registry.h"

namespace specscope::discovery {

struct ListedDrafter {
  MethodNeed role = MethodNeed::Nothing;  // DraftModel, EagleHead, Eagle3Head or MedusaHeads
  std::string name, path;
  std::vector<std::string> methods;  // the methods it serves on this target ("eagle1", "eagle2")
  std::string basis;                 // why it fits ("base model name", "same tokenizer", "family.json")
};

struct ListedModel {
  std::string name;  // as its store names it ("tiny:latest", "Qwen/Qwen2.5-0.5B"), or the shipped folder's name
  std::string spec;  // "ollama:tiny:latest"; empty for the shipped family
  std::string path;  // what the loaders take
  std::string what;  // the architecture ("LlamaForCausalLM", "llama"), or "EAGLE-3 head", "LoRA on ..."
  std::string parameters, dtype, size;  // "1.2B", "q8_0", "1.3 GiB"
  uint64_t size_bytes = 0;
  std::string memory;      // "needs 1.4 GiB (weights 1.3 GiB + KV cache 64.0 MiB for 4096 tokens)"; empty: unknown
  bool choosable = false;  // can be the target
  std::string why_not;     // when not choosable: one line
  std::vector<ListedDrafter> drafters;  // preferred first within each role
  // The drafters of one role, preferred first.
  std::vector<const ListedDrafter*> drafters_for(MethodNeed role) const;
};

struct ModelGroup {
  std::string title;  // "Shipped with SpecScope", "Ollama", "LM Studio", "Hugging Face cache"
  std::vector<ListedModel> models;
};

// The groups in the order above; a store with no models is left out. `shipped_base` (the default model's folder,
// "" for none) heads the list with the drafters its family.json names. `available`: the memory a target may use
// (MemAvailable); a model whose estimate (weights + the CPU KV cache at its default context) exceeds it is not
// choosable, with memory_shortfall's line as the reason. nullopt: nothing is refused for memory.
std::vector<ModelGroup> list_models(const Discovery& d, const std::string& shipped_base,
                                    std::optional<uint64_t> available);

// Whether the row matches what was typed in the search box: every whitespace-separated word, case-insensitively,
// in its name, spec, architecture or dtype. An empty query matches everything.
bool matches_query(const ListedModel& m, const std::string& query);

// "1.2B", "135.0M", "9.4K": parameter counts as the listings print them.
std::string parameter_count_text(uint64_t n);

}  // namespace specscope::discovery
