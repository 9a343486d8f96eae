#pragma once
// Model stores of the other local tools, built at test time from the committed tiny fixtures (no Python): an
// Ollama tree (manifests + content-addressed blobs), LM Studio's two layouts, and a Hugging Face hub cache
// (refs/main, two snapshots of one repo, files as links into blobs/), with EAGLE-1, EAGLE-3 and Medusa heads for
// the tiny target, a smaller SpS drafter cut from it, heads for another hidden size, and one of each kind of
// breakage discovery must survive. Used by discovery_test.cpp (the engine) and models_cli_test.cpp (the CLI).
//
// Layout under `home` (a fresh folder, world-readable so that a test can read it as another user):
//   .ollama/models/manifests/registry.ollama.ai/library/tiny/latest        -> llama_bytelevel_f32.f32.gguf
//                                             (+ template, system, params and license layers)
//   .ollama/models/manifests/registry.ollama.ai/someone/tiny2/q8           -> llama_bytelevel_f32.q8_0.gguf
//   .ollama/models/manifests/registry.ollama.ai/library/missing/latest     BROKEN: its blob is not there
//   .ollama/models/manifests/registry.ollama.ai/library/truncated/latest   BROKEN: blob shorter than the manifest says
//   .ollama/models/manifests/registry.ollama.ai/library/cut/latest         BROKEN: blob cut, manifest gives no size
//   .ollama/models/manifests/registry.ollama.ai/library/garbage/latest     BROKEN: not JSON
//   .lmstudio/models/lmstudio-community/spm-GGUF/{llama_spm_tied_f32.q8_0,.q4_1}.gguf (+ mmproj-spm-f16.gguf)
//   .lmstudio/models/other/mamba-GGUF/bad_arch.gguf                        listed, does not load
//   .lmstudio/models/locked/hidden-GGUF/qwen2_f32.f32.gguf                 the folder a test makes unreadable
//   .cache/lm-studio/models/legacy/qwen-GGUF/qwen2_f32.f32.gguf            the pre-0.3 layout
//   .cache/huggingface/hub/models--specscope--tinyvocab_target             refs/main -> kMainCommit; kOldCommit too
//   .cache/huggingface/hub/models--specscope--tinyvocab_draft_small        the target's layer 0 only (SpS drafter)
//   .cache/huggingface/hub/models--specscope--tv_eagle1, tv_eagle3, tv_medusa   heads for the target (hidden 16)
//   .cache/huggingface/hub/models--specscope--wide_eagle1                  an EAGLE-1 head for hidden 64, vocab 3007
//   .cache/huggingface/hub/models--specscope--wide_medusa                  hidden 64, but names tinyvocab_target
//   .cache/huggingface/hub/models--someone--mistral-GGUF                   a GGUF repo (one .gguf)
//   .cache/huggingface/hub/models--specscope--broken                       BROKEN: config.json links to no blob
//   .cache/huggingface/hub/datasets--someone--data                         not a model repo: ignored
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/discovery/store_roots.h"
#include "engine/util/sha256.h"
#include "tests/test_support.h"

namespace specscope::test {

namespace store_fixture_detail {

namespace fs = std::filesystem;

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void spit(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

// An Ollama blob: the bytes stored under their own digest, as `ollama pull` leaves them.
inline std::string put_ollama_blob(const fs::path& root, const std::string& bytes) {
  const std::string hex = sha256_hex(bytes);
  spit(root / "blobs" / ("sha256-" + hex), bytes);
  return "sha256:" + hex;
}

inline nlohmann::json layer(const std::string& kind, const std::string& digest, uint64_t size) {
  return {{"mediaType", "application/vnd.ollama.image." + kind}, {"digest", digest}, {"size", size}};
}

inline void put_manifest(const fs::path& root, const std::string& ns_name_tag,
                         const std::vector<nlohmann::json>& layers) {
  const nlohmann::json m = {{"schemaVersion", 2},
                            {"mediaType", "application/vnd.docker.distribution.manifest.v2+json"},
                            {"config", {{"mediaType", "application/vnd.docker.container.image.v1+json"},
                                        {"digest", "sha256:" + std::string(64, '0')}, {"size", 2}}},
                            {"layers", nlohmann::json(layers)}};
  spit(root / "manifests" / "registry.ollama.ai" / ns_name_tag, m.dump());
}

// A hub-cache file: the bytes in blobs/<their sha256>, the snapshot's entry a relative link to it.
inline void put_hf_file(const fs::path& repo, const std::string& commit, const std::string& name,
                        const std::string& bytes) {
  const std::string hex = sha256_hex(bytes);
  spit(repo / "blobs" / hex, bytes);
  const fs::path link = repo / "snapshots" / commit / name;
  fs::create_directories(link.parent_path());
  fs::remove(link);
  fs::create_symlink(fs::path("../../blobs") / hex, link);
}

inline void put_hf_folder(const fs::path& repo, const std::string& commit, const fs::path& from) {
  for (const auto& e : fs::directory_iterator(from))
    if (e.is_regular_file()) put_hf_file(repo, commit, e.path().filename().string(), slurp(e.path()));
}

// A safetensors file holding only the tensors `keep` accepts (same dtypes, shapes and bytes, offsets renumbered).
template <class Keep>
std::string safetensors_subset(const std::string& file, Keep keep) {
  uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  const nlohmann::json header = nlohmann::json::parse(file.substr(8, n));
  const size_t data = 8 + n;
  nlohmann::json out = nlohmann::json::object();
  std::string body;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") {
      out[name] = t;
      continue;
    }
    if (!keep(name)) continue;
    const uint64_t b = t["data_offsets"][0], e = t["data_offsets"][1];
    nlohmann::json nt = t;
    nt["data_offsets"] = {body.size(), body.size() + (e - b)};
    body += file.substr(data + b, e - b);
    out[name] = nt;
  }
  std::string h = out.dump();
  while ((8 + h.size()) % 8) h += ' ';
  const uint64_t hn = h.size();
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &hn, 8);
  return bytes + h + body;
}

}  // namespace store_fixture_detail

struct ModelStores {
  static constexpr const char* kMainCommit = "1111111111111111111111111111111111111111";
  static constexpr const char* kOldCommit = "2222222222222222222222222222222222222222";
  std::string home, ollama, lmstudio, lmstudio_legacy, hf;
  std::string locked_folder;  // LM Studio's locked/ publisher: a test makes it unreadable

  discovery::StoreRoots roots() const {
    discovery::StoreRoots r;
    r.ollama = {ollama};
    r.lmstudio = {lmstudio, lmstudio_legacy};
    r.hf = {hf};
    return r;
  }
  std::string hf_repo(const std::string& id) const {
    std::string f = id;
    f.replace(f.find('/'), 1, "--");
    return hf + "/models--" + f;
  }
  std::string snapshot(const std::string& id, const char* commit = kMainCommit) const {
    return hf_repo(id) + "/snapshots/" + commit;
  }

  // Points discovery at these stores the way a user's machine does: through HOME, with every variable that would
  // override it unset, except OLLAMA_MODELS (set to the same folder HOME implies), which keeps a machine's system-wide
  // Ollama store (/usr/share/ollama/...) out of the listing. Child processes (the CLI) inherit it.
  void use_as_environment() const {
    ::setenv("HOME", home.c_str(), 1);
    ::setenv("OLLAMA_MODELS", ollama.c_str(), 1);
    for (const char* v : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"}) ::unsetenv(v);
  }
};

// Builds the stores into `dir` (created; anything there before is removed).
inline ModelStores build_model_stores(const std::string& dir) {
  using namespace store_fixture_detail;
  fs::remove_all(dir);
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0755);
  ModelStores s;
  s.home = dir;
  s.ollama = dir + "/.ollama/models";
  s.lmstudio = dir + "/.lmstudio/models";
  s.lmstudio_legacy = dir + "/.cache/lm-studio/models";
  s.hf = dir + "/.cache/huggingface/hub";
  const fs::path ol(s.ollama), lm(s.lmstudio), hub(s.hf);

  // Ollama
  const std::string tiny = slurp(fixture("gguf_models/llama_bytelevel_f32.f32.gguf"));
  const std::string tmpl = "{{ if .System }}<|system|>{{ .System }}{{ end }}<|user|>{{ .Prompt }}<|assistant|>";
  const std::string params = R"({"stop":["<|user|>"],"temperature":0.6,"num_ctx":256})";
  put_manifest(ol, "library/tiny/latest",
               {layer("model", put_ollama_blob(ol, tiny), tiny.size()),
                layer("template", put_ollama_blob(ol, tmpl), tmpl.size()),
                layer("system", put_ollama_blob(ol, "You are tiny."), 13),
                layer("params", put_ollama_blob(ol, params), params.size()),
                layer("license", put_ollama_blob(ol, "MIT"), 3)});
  const std::string q8 = slurp(fixture("gguf_models/llama_bytelevel_f32.q8_0.gguf"));
  put_manifest(ol, "someone/tiny2/q8", {layer("model", put_ollama_blob(ol, q8), q8.size())});
  put_manifest(ol, "library/missing/latest", {layer("model", "sha256:" + std::string(64, 'a'), 1000)});
  const std::string spm = slurp(fixture("gguf_models/llama_spm_tied_f32.f32.gguf"));
  const std::string half = spm.substr(0, spm.size() / 2);
  put_manifest(ol, "library/truncated/latest", {layer("model", put_ollama_blob(ol, half), spm.size())});
  const std::string cut = spm.substr(0, spm.size() - 1000);
  put_manifest(ol, "library/cut/latest",
               {nlohmann::json{{"mediaType", "application/vnd.ollama.image.model"}, {"digest", put_ollama_blob(ol, cut)}}});
  spit(ol / "manifests/registry.ollama.ai/library/garbage/latest", "this is not JSON");

  // LM Studio, both layouts
  const fs::path spm_repo = lm / "lmstudio-community/spm-GGUF";
  fs::create_directories(spm_repo);
  fs::copy_file(fixture("gguf_models/llama_spm_tied_f32.q8_0.gguf"), spm_repo / "llama_spm_tied_f32.q8_0.gguf");
  fs::copy_file(fixture("gguf_models/llama_spm_tied_f32.q4_1.gguf"), spm_repo / "llama_spm_tied_f32.q4_1.gguf");
  fs::copy_file(fixture("gguf/small.gguf"), spm_repo / "mmproj-spm-f16.gguf");
  fs::create_directories(lm / "other/mamba-GGUF");
  fs::copy_file(fixture("gguf_models/bad_arch.gguf"), lm / "other/mamba-GGUF/bad_arch.gguf");
  s.locked_folder = (lm / "locked").string();
  fs::create_directories(lm / "locked/hidden-GGUF");
  fs::copy_file(fixture("gguf_models/qwen2_f32.f32.gguf"), lm / "locked/hidden-GGUF/qwen2_f32.f32.gguf");
  const fs::path legacy = fs::path(s.lmstudio_legacy) / "legacy/qwen-GGUF";
  fs::create_directories(legacy);
  fs::copy_file(fixture("gguf_models/qwen2_f32.f32.gguf"), legacy / "qwen2_f32.f32.gguf");

  // The hub cache
  const fs::path target = s.hf_repo("specscope/tinyvocab_target");
  put_hf_folder(target, ModelStores::kMainCommit, fixture("models/tinyvocab_target"));
  put_hf_folder(target, ModelStores::kOldCommit, fixture("models/tinyvocab_target"));
  spit(target / "refs/main", ModelStores::kMainCommit);

  const fs::path small = s.hf_repo("specscope/tinyvocab_draft_small");
  nlohmann::json cfg = nlohmann::json::parse(slurp(fixture("models/tinyvocab_target/config.json")));
  cfg["num_hidden_layers"] = 1;
  put_hf_file(small, ModelStores::kMainCommit, "config.json", cfg.dump(2));
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    put_hf_file(small, ModelStores::kMainCommit, f, slurp(fixture(std::string("models/tinyvocab_target/") + f)));
  put_hf_file(small, ModelStores::kMainCommit, "model.safetensors",
              safetensors_subset(slurp(fixture("models/tinyvocab_target/model.safetensors")), [](const std::string& n) {
                return n.find("model.layers.") == std::string::npos || n.find("model.layers.0.") != std::string::npos;
              }));
  spit(small / "refs/main", ModelStores::kMainCommit);

  for (const char* h : {"eagle1", "eagle3", "medusa"}) {
    const fs::path repo = s.hf_repo(std::string("specscope/tv_") + h);
    put_hf_folder(repo, ModelStores::kMainCommit, fixture(std::string("models/tinyvocab_heads/") + h));
    spit(repo / "refs/main", ModelStores::kMainCommit);
  }
  const fs::path wide_eagle = s.hf_repo("specscope/wide_eagle1");
  put_hf_folder(wide_eagle, ModelStores::kMainCommit, fixture("heads/eagle1_st"));
  fs::remove(wide_eagle / "snapshots" / ModelStores::kMainCommit / "expected.json");
  spit(wide_eagle / "refs/main", ModelStores::kMainCommit);
  const fs::path wide_medusa = s.hf_repo("specscope/wide_medusa");
  nlohmann::json mcfg = nlohmann::json::parse(slurp(fixture("heads/medusa_st/config.json")));
  mcfg["base_model_name_or_path"] = "specscope/tinyvocab_target";
  put_hf_file(wide_medusa, ModelStores::kMainCommit, "config.json", mcfg.dump(2));
  put_hf_file(wide_medusa, ModelStores::kMainCommit, "medusa_lm_head.safetensors",
              slurp(fixture("heads/medusa_st/medusa_lm_head.safetensors")));
  spit(wide_medusa / "refs/main", ModelStores::kMainCommit);

  const fs::path gguf_repo = s.hf_repo("someone/mistral-GGUF");
  put_hf_file(gguf_repo, ModelStores::kMainCommit, "mistral_f32.f16.gguf", slurp(fixture("gguf_models/mistral_f32.f16.gguf")));
  put_hf_file(gguf_repo, ModelStores::kMainCommit, "README.md", "# a GGUF repo\n");
  spit(gguf_repo / "refs/main", ModelStores::kMainCommit);

  const fs::path broken = s.hf_repo("specscope/broken");
  put_hf_folder(broken, ModelStores::kMainCommit, fixture("models/tinyvocab_target"));
  const fs::path cfg_link = broken / "snapshots" / ModelStores::kMainCommit / "config.json";
  fs::remove(cfg_link.parent_path() / fs::read_symlink(cfg_link));  // the blob: the link now dangles
  spit(broken / "refs/main", ModelStores::kMainCommit);

  put_hf_file(hub / "datasets--someone--data", ModelStores::kMainCommit, "data.json", "[]");
  return s;
}

}  // namespace specscope::test
