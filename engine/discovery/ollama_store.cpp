// Ollama's store: manifests/<registry>/<namespace>/<name>/<tag> (JSON, ollama_manifest.h) naming content-addressed
// blobs/sha256-<hex>. The model layer's blob is a GGUF file, loaded in place.
#include <filesystem>

#include "engine/discovery/ollama_manifest.h"
#include "engine/discovery/stores.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"

namespace specscope::discovery {

namespace fs = std::filesystem;

namespace {

constexpr uintmax_t kMaxTextLayer = 1 << 20;  // templates, params and system prompts are a few KB

// Ollama's own short form: "llama3:8b" for the library, "user/model:tag" on its registry, else the full path.
std::string display_name(const std::string& registry, const std::string& ns, const std::string& name,
                         const std::string& tag) {
  if (registry == "registry.ollama.ai") return (ns == "library" ? "" : ns + "/") + name + ":" + tag;
  return registry + "/" + ns + "/" + name + ":" + tag;
}

// The text of a small layer; empty (with a note) when its blob is missing or too large.
std::string layer_text(const std::string& root, const OllamaLayer* l, const std::string& manifest, Found& f) {
  if (!l) return "";
  const fs::path blob = fs::path(root) / "blobs" / ollama_blob_name(l->digest, manifest);
  std::error_code ec;
  const uintmax_t size = fs::file_size(blob, ec);
  if (ec) {
    f.notes.push_back("its " + l->kind + " layer's blob " + blob.string() + " is missing");
    return "";
  }
  if (size > kMaxTextLayer) {
    f.notes.push_back("its " + l->kind + " layer is " + std::to_string(size) + " bytes; not read");
    return "";
  }
  return read_text_file(blob.string());
}

void add_manifest(const std::string& root, const std::string& manifest, const std::string& registry,
                  const std::string& ns, const std::string& name, const std::string& tag, Discovery& out) {
  Found f;
  f.source = Source::Ollama;
  f.root = root;
  f.name = display_name(registry, ns, name, tag);
  f.spec = "ollama:" + f.name;
  try {
    OllamaManifest m;
    const std::string blob = ollama_model_blob(root, manifest, &m);
    if (!probe_into(blob, Source::Ollama, f, out)) return;
    f.ollama_template = layer_text(root, m.layer("template"), manifest, f);
    f.ollama_system = layer_text(root, m.layer("system"), manifest, f);
    f.ollama_params = layer_text(root, m.layer("params"), manifest, f);
    if (m.layer("adapter") && f.facts.problem.empty())
      f.facts.problem = "has a LoRA adapter layer, which SpecScope does not apply to GGUF models";
    if (m.layer("projector")) f.notes.push_back("has a vision projector layer; SpecScope runs the text model only");
  } catch (const InputError& e) {
    out.problems.push_back({Source::Ollama, e.where().empty() ? manifest : e.where(), e.problem()});
    return;
  }
  out.models.push_back(std::move(f));
}

}  // namespace

std::string ollama_model_blob(const std::string& root, const std::string& manifest_path, OllamaManifest* out) {
  std::error_code ec;
  if (fs::file_size(manifest_path, ec) > kMaxTextLayer)
    throw InputError(manifest_path, "too large to be an Ollama manifest");
  OllamaManifest m = parse_ollama_manifest(read_text_file(manifest_path), manifest_path);
  const OllamaLayer* model = m.layer("model");
  if (!model) throw InputError(manifest_path, "has no model layer (application/vnd.ollama.image.model)");
  const fs::path blob = fs::path(root) / "blobs" / ollama_blob_name(model->digest, manifest_path);
  if (!fs::exists(blob, ec))
    throw InputError(manifest_path, "its model layer's blob " + blob.filename().string() + " is missing from " +
                                        (fs::path(root) / "blobs").string());
  if (const uintmax_t size = fs::file_size(blob, ec); !ec && model->size && size < model->size)
    throw InputError(blob.string(), "truncated: " + std::to_string(size) + " of the manifest's " +
                                        std::to_string(model->size) + " bytes (an interrupted pull?)");
  if (out) *out = std::move(m);
  return blob.string();
}

void scan_ollama(const std::string& root, Discovery& out) {
  const fs::path manifests = fs::path(root) / "manifests";
  std::error_code ec;
  if (!fs::exists(manifests, ec)) return;  // an Ollama that has pulled nothing yet
  for (const auto& registry : list_folder(manifests.string(), Source::Ollama, out)) {
    const fs::path r = manifests / registry;
    if (!fs::is_directory(r, ec)) continue;
    for (const auto& ns : list_folder(r.string(), Source::Ollama, out)) {
      if (!fs::is_directory(r / ns, ec)) continue;
      for (const auto& name : list_folder((r / ns).string(), Source::Ollama, out)) {
        if (!fs::is_directory(r / ns / name, ec)) continue;
        for (const auto& tag : list_folder((r / ns / name).string(), Source::Ollama, out)) {
          const fs::path m = r / ns / name / tag;
          if (fs::is_regular_file(m, ec)) add_manifest(root, m.string(), registry, ns, name, tag, out);
        }
      }
    }
  }
}

}  // namespace specscope::discovery
