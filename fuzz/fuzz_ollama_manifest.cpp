// libFuzzer target: Ollama's manifest parser (engine/discovery/ollama_manifest.h) on arbitrary bytes. A manifest is
// a file anyone could have written into ~/.ollama/models/manifests, and its digests become file names under blobs/,
// so beyond "InputError or a manifest, never a crash", every digest it accepts must map to a plain blob name:
// "sha256-" and 64 lowercase hex digits, never a '/' or "..", and at most one model layer.
// Seeds: fuzz/corpus/ollama_manifest (a pulled model's manifest with model, template, params, system and license
// layers; a minimal one; one with a media-type parameter).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/discovery/ollama_manifest.h"
#include "engine/util/error.h"

using namespace specscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  discovery::OllamaManifest m;
  try {
    m = discovery::parse_ollama_manifest(text, "fuzz");
  } catch (const InputError&) {
    return 0;
  }
  int models = 0;
  for (const auto& l : m.layers) {
    const std::string blob = discovery::ollama_blob_name(l.digest, "fuzz");  // accepted digests must map
    if (blob.size() != 71 || blob.rfind("sha256-", 0) != 0 || blob.find('/') != std::string::npos ||
        blob.find("..") != std::string::npos)
      std::abort();
    for (char c : blob.substr(7))
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) std::abort();
    if (l.kind == "model") ++models;
  }
  if (models > 1 || (m.layer("model") == nullptr) != (models == 0)) std::abort();
  return 0;
}
