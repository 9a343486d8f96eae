#pragma once
// Ollama's manifest: the JSON file at manifests/<registry>/<namespace>/<name>/<tag> that lists a model's layers
// (OCI-like: {"schemaVersion": 2, "config": {...}, "layers": [{"mediaType", "digest", "size"}, ...]}). Each layer's
// bytes are the blob blobs/sha256-<hex> of its digest. The media types SpecScope reads:
//   application/vnd.ollama.image.model      the GGUF weights (exactly one)
//   application/vnd.ollama.image.template   the chat template (Go text/template syntax, not Jinja)
//   application/vnd.ollama.image.params     a JSON object of run parameters (stop, temperature, num_ctx, ...)
//   application/vnd.ollama.image.system     the default system prompt
// and it recognizes .adapter (a LoRA on the weights) and .projector (a vision tower), which it cannot apply.
// A media type may carry parameters after ';' (".template; name=..."); they are ignored.
// The manifest comes from a file anyone could have written: the parser checks every field, and digests must be
// sha256:<64 hex digits>, so a digest can never name a path outside blobs/.
#include <cstdint>
#include <string>
#include <vector>

namespace specscope::discovery {

struct OllamaLayer {
  std::string media_type;  // as written, parameters included
  std::string kind;        // the part after "application/vnd.ollama.image." ("model", "template", ...); "" otherwise
  std::string digest;      // "sha256:<hex>"
  uint64_t size = 0;
};

struct OllamaManifest {
  std::vector<OllamaLayer> layers;
  // The first layer of that kind, or nullptr.
  const OllamaLayer* layer(const std::string& kind) const;
};

// Throws InputError(where, ...) for anything that is not a manifest as described above: invalid JSON, no layers
// array, a layer without a string mediaType or a valid digest, a negative or non-integer size, more than one
// model layer.
OllamaManifest parse_ollama_manifest(const std::string& text, const std::string& where);

// "sha256:<hex>" -> "sha256-<hex>", the blob's file name. InputError(where, ...) for any other digest.
std::string ollama_blob_name(const std::string& digest, const std::string& where);

}  // namespace specscope::discovery
