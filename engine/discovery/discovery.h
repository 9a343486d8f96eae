#pragma once
// Model discovery: every model the other local tools keep (Ollama, LM Studio, the Hugging Face hub cache; see
// store_roots.h), what each one is (model_probe.h), whether SpecScope can run it, and which drafters found among
// them fit which targets (pairing.h). Read-only: nothing in those stores is written, renamed or touched, and no
// weights are read, only headers and configs.
//
// A broken store never stops the listing: each broken thing (a manifest naming a missing blob, a truncated blob,
// a dangling link in the hub cache, a folder that cannot be read, a malformed file) is one Problem, one line,
// and discovery goes on with the next.
#include <string>
#include <vector>

#include "engine/discovery/model_probe.h"
#include "engine/discovery/store_roots.h"

namespace specscope::discovery {

struct Found {
  Source source = Source::HfCache;
  std::string name;  // as its tool names it: "llama3.2:1b", "Qwen/Qwen2.5-0.5B", "lmstudio-community/x/x-Q4_K_M.gguf"
  std::string spec;  // what --model accepts for it: "ollama:llama3.2:1b", "hf:Qwen/Qwen2.5-0.5B", "lmstudio:..."
  std::string path;  // what the loaders take (the blob, snapshot folder or .gguf file)
  std::string root;  // the store it was found in
  ModelFacts facts;
  // Ollama's other layers, where the manifest has them (SpecScope runs the GGUF's own Jinja template: Ollama's is
  // Go template syntax; these are shown, not applied).
  std::string ollama_template, ollama_system, ollama_params;  // params: JSON text
  std::vector<std::string> notes;  // what the listing should say besides the facts
  std::string pairing_note;        // a head that fits no target found: why
};

struct Problem {
  Source source = Source::HfCache;
  std::string path, problem;
  std::string line() const { return path + ": " + problem; }
};

// A drafter found for a target: `drafter` serves `methods` (eagle1+eagle2, eagle3, medusa, or sps) on `target`.
struct Pairing {
  size_t target = 0, drafter = 0;
  std::vector<std::string> methods;
  std::string basis;  // "base model name", "architecture, hidden size and vocabulary", "same tokenizer"
};

struct Discovery {
  StoreRoots roots;
  std::vector<Found> models;  // in store order: Ollama, LM Studio, HF cache; each store sorted by name
  std::vector<Problem> problems;
  std::vector<Pairing> pairings;

  // The pairings of models[target], in preference order (named base first, then by drafter name).
  std::vector<const Pairing*> drafters_of(size_t target) const;
  // The model whose path is `path` (same file or folder), or nullptr.
  const Found* find_path(const std::string& path, size_t* index = nullptr) const;
};

Discovery discover(const StoreRoots& roots);

}  // namespace specscope::discovery
