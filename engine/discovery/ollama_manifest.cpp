#include "engine/discovery/ollama_manifest.h"

#include <nlohmann/json.hpp>

#include "engine/util/error.h"

namespace specscope::discovery {

namespace {

const std::string kPrefix = "application/vnd.ollama.image.";

bool is_hex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string kind_of(const std::string& media_type) {
  std::string base = media_type.substr(0, media_type.find(';'));
  while (!base.empty() && base.back() == ' ') base.pop_back();
  return base.rfind(kPrefix, 0) == 0 ? base.substr(kPrefix.size()) : std::string();
}

}  // namespace

const OllamaLayer* OllamaManifest::layer(const std::string& kind) const {
  for (const auto& l : layers)
    if (l.kind == kind) return &l;
  return nullptr;
}

std::string ollama_blob_name(const std::string& digest, const std::string& where) {
  const std::string algo = "sha256:";
  if (digest.rfind(algo, 0) != 0 || !is_hex64(digest.substr(algo.size())))
    throw InputError(where, "digest '" + digest.substr(0, 80) + "' is not sha256:<64 lowercase hex digits>");
  return "sha256-" + digest.substr(algo.size());
}

OllamaManifest parse_ollama_manifest(const std::string& text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where, std::string("not a valid Ollama manifest (invalid JSON: ") + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("layers") || !j["layers"].is_array())
    throw InputError(where, "not an Ollama manifest (no \"layers\" array)");
  OllamaManifest m;
  int models = 0;
  for (size_t i = 0; i < j["layers"].size(); ++i) {
    const auto& l = j["layers"][i];
    const std::string at = "layer " + std::to_string(i);
    if (!l.is_object()) throw InputError(where, at + " is not an object");
    if (!l.contains("mediaType") || !l["mediaType"].is_string())
      throw InputError(where, at + " has no string \"mediaType\"");
    if (!l.contains("digest") || !l["digest"].is_string()) throw InputError(where, at + " has no string \"digest\"");
    OllamaLayer layer;
    layer.media_type = l["mediaType"].get<std::string>();
    layer.kind = kind_of(layer.media_type);
    layer.digest = l["digest"].get<std::string>();
    ollama_blob_name(layer.digest, where + ": " + at);  // validates
    if (l.contains("size")) {
      if (!l["size"].is_number_unsigned()) throw InputError(where, at + ": \"size\" must be a non-negative integer");
      layer.size = l["size"].get<uint64_t>();
    }
    if (layer.kind == "model") ++models;
    m.layers.push_back(std::move(layer));
  }
  if (models > 1) throw InputError(where, "has " + std::to_string(models) + " model layers (expected one)");
  return m;
}

}  // namespace specscope::discovery
