#pragma once
// One walker per store layout (discovery.h). Each adds what it finds under one root to `out.models` and each
// broken thing to `out.problems`; none throws for anything found on disk.
#include <string>
#include <vector>

#include "engine/discovery/discovery.h"
#include "engine/discovery/ollama_manifest.h"

namespace specscope::discovery {

void scan_ollama(const std::string& root, Discovery& out);
void scan_lmstudio(const std::string& root, Discovery& out);
void scan_hf_cache(const std::string& root, Discovery& out);
// The model blob of an Ollama manifest under `root`, checked (the manifest parses, has a model layer, its blob is
// there and not shorter than the manifest says). `manifest` receives the parsed manifest. Throws InputError.
std::string ollama_model_blob(const std::string& root, const std::string& manifest_path,
                              OllamaManifest* manifest = nullptr);
// Pairs drafters with targets among out.models (pairing.cpp).
void pair_drafters(Discovery& out);

// The entries of a folder, sorted by name; a folder that cannot be read is one Problem and no entries.
std::vector<std::string> list_folder(const std::string& dir, Source source, Discovery& out);
// probe_model, with a file that cannot be read reported as a Problem (false) instead of thrown.
bool probe_into(const std::string& path, Source source, Found& found, Discovery& out);

}  // namespace specscope::discovery
