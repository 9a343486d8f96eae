// Model discovery (engine/discovery/): the stores of tests/model_store_fixtures.h, built at test time, listed
// exactly; facts read from headers equal what the loaders report; every pairing offered loads and the misfits are
// refused; broken stores are one problem each and never stop the listing; nothing in the stores changes; model
// specs resolve; the Ollama manifest parser refuses what is not a manifest; the memory estimate's arithmetic.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "engine/discovery/discovered_family.h"
#include "engine/discovery/discovery.h"
#include "engine/discovery/memory_estimate.h"
#include "engine/discovery/model_spec.h"
#include "engine/discovery/ollama_manifest.h"
#include "engine/discovery/tokenizer_fingerprint.h"
#include "engine/formats/gguf.h"
#include "engine/formats/safetensors.h"
#include "engine/heads/eagle_head.h"
#include "engine/heads/medusa_head.h"
#include "engine/model/model.h"
#include "engine/tokenizer/shared_vocabulary.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "tests/model_store_fixtures.h"

namespace specscope {
namespace {

namespace fs = std::filesystem;
using namespace discovery;

class Discovery_ : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stores_ = new test::ModelStores(test::build_model_stores(
        (fs::temp_directory_path() / ("specscope_discovery_" + std::to_string(::getpid()))).string()));
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(stores_->home, ec);
    delete stores_;
  }
  static const test::ModelStores& stores() { return *stores_; }
  static const Discovery& found() {
    static const Discovery d = discover(stores().roots());
    return d;
  }
  static const Found& by_name(const std::string& name) {
    for (const auto& m : found().models)
      if (m.name == name) return m;
    throw std::runtime_error("not discovered: " + name);
  }
  static size_t index_of(const std::string& name) { return size_t(&by_name(name) - found().models.data()); }

 private:
  static test::ModelStores* stores_;
};
test::ModelStores* Discovery_::stores_ = nullptr;

TEST_F(Discovery_, ListsExactlyWhatIsThere) {
  std::vector<std::string> specs;
  for (const auto& m : found().models) specs.push_back(m.spec);
  const std::vector<std::string> expected = {
      "ollama:tiny:latest",
      "ollama:someone/tiny2:q8",
      "lmstudio:lmstudio-community/spm-GGUF/llama_spm_tied_f32.q4_1.gguf",
      "lmstudio:lmstudio-community/spm-GGUF/llama_spm_tied_f32.q8_0.gguf",
      "lmstudio:locked/hidden-GGUF/qwen2_f32.f32.gguf",
      "lmstudio:other/mamba-GGUF/bad_arch.gguf",
      "lmstudio:legacy/qwen-GGUF/qwen2_f32.f32.gguf",
      "hf:someone/mistral-GGUF/mistral_f32.f16.gguf",
      "hf:specscope/tinyvocab_draft_small",
      "hf:specscope/tinyvocab_target",
      "hf:specscope/tinyvocab_target@222222222222",
      "hf:specscope/tv_eagle1",
      "hf:specscope/tv_eagle3",
      "hf:specscope/tv_medusa",
      "hf:specscope/wide_eagle1",
      "hf:specscope/wide_medusa",
  };
  EXPECT_EQ(specs, expected);
  // Where each came from: the snapshot refs/main names, the older one, the Ollama blob, the projector left out.
  EXPECT_TRUE(same_path(by_name("specscope/tinyvocab_target").path, stores().snapshot("specscope/tinyvocab_target")));
  EXPECT_TRUE(same_path(by_name("specscope/tinyvocab_target@222222222222").path,
                        stores().snapshot("specscope/tinyvocab_target", test::ModelStores::kOldCommit)));
  EXPECT_EQ(fs::path(by_name("tiny:latest").path).parent_path(), fs::path(stores().ollama) / "blobs");
}

TEST_F(Discovery_, EachBrokenThingIsOneProblemAndTheListingGoesOn) {
  std::map<std::string, std::string> problems;  // path -> problem
  for (const auto& p : found().problems) {
    EXPECT_EQ(p.line().find('\n'), std::string::npos) << p.line();
    problems[p.path] = p.problem;
  }
  std::string all;
  for (const auto& p : found().problems) all += p.line() + "\n";
  ASSERT_EQ(found().problems.size(), 5u) << all;
  const std::string manifests = stores().ollama + "/manifests/registry.ollama.ai/library/";
  EXPECT_NE(problems[manifests + "missing/latest"].find("is missing"), std::string::npos);
  EXPECT_NE(problems[manifests + "garbage/latest"].find("invalid JSON"), std::string::npos);
  // The truncated blobs are named by their own path: the size check, and the GGUF reader for the one without.
  int truncated = 0, cut = 0;
  for (const auto& [path, problem] : problems) {
    if (path.find("/blobs/sha256-") == std::string::npos) continue;
    if (problem.find("of the manifest's") != std::string::npos) ++truncated;
    else ++cut;
  }
  EXPECT_EQ(truncated, 1);
  EXPECT_EQ(cut, 1);
  const std::string link = stores().snapshot("specscope/broken") + "/config.json";
  ASSERT_TRUE(problems.count(link)) << "no problem names " << link;
  EXPECT_NE(problems[link].find("dangling link"), std::string::npos);
}

// What the headers say is what the loaders find: parameters and dtype of every model that loads, and every head
// loads on every target it was paired with (so a pairing offered is a pairing that works).
TEST_F(Discovery_, FactsAgreeWithTheLoaders) {
  int checked = 0;
  for (const auto& m : found().models) {
    if (m.facts.kind != ModelKind::Model) continue;
    if (!m.facts.loads()) {
      EXPECT_THROW(Model::load(m.path), InputError) << m.name << " was judged not to load: " << m.facts.problem;
      continue;
    }
    const auto model = Model::load(m.path);
    EXPECT_EQ(m.facts.parameters, model->parameter_count()) << m.name;
    EXPECT_EQ(m.facts.dtype, model->weights_dtype()) << m.name;
    EXPECT_EQ(m.facts.hidden_size, model->config().hidden_size) << m.name;
    EXPECT_EQ(m.facts.vocab_size, model->config().vocab_size) << m.name;
    EXPECT_EQ(m.facts.num_layers, model->config().num_layers) << m.name;
    EXPECT_EQ(m.facts.kv_dim, model->config().cache_key_dim()) << m.name;
    EXPECT_EQ(m.facts.kv_value_dim, model->config().cache_value_dim()) << m.name;
    ++checked;
  }
  EXPECT_EQ(checked, 10);
  const Found& bad = by_name("other/mamba-GGUF/bad_arch.gguf");
  EXPECT_NE(bad.facts.problem.find("mamba"), std::string::npos) << bad.facts.problem;
}

TEST_F(Discovery_, EveryPairingOfferedLoads) {
  ASSERT_FALSE(found().pairings.empty());
  for (const auto& p : found().pairings) {
    const Found& t = found().models[p.target];
    const Found& d = found().models[p.drafter];
    SCOPED_TRACE(t.name + " <- " + d.name);
    const auto target = Model::load(t.path);
    switch (d.facts.kind) {
      case ModelKind::Eagle1Head:
      case ModelKind::Eagle3Head: EXPECT_NO_THROW(EagleHead::load(d.path, *target)); break;
      case ModelKind::MedusaHead: EXPECT_NO_THROW(MedusaHeads::load(d.path, *target)); break;
      default: {
        const auto draft = Model::load(d.path);
        EXPECT_FALSE(first_token_mismatch(draft->tokenizer(), target->tokenizer()));
        EXPECT_LT(draft->parameter_count(), target->parameter_count());
      }
    }
  }
}

TEST_F(Discovery_, PairsTheRightDraftersAndRefusesMisfits) {
  auto drafters = [&](const std::string& target) {
    std::map<std::string, std::string> out;  // method -> drafter name (the first, preferred one)
    for (const Pairing* p : found().drafters_of(index_of(target)))
      for (const auto& m : p->methods) out.emplace(m, found().models[p->drafter].name);
    return out;
  };
  const std::map<std::string, std::string> tiny_target = {{"eagle1", "specscope/tv_eagle1"},
                                                           {"eagle2", "specscope/tv_eagle1"},
                                                           {"eagle3", "specscope/tv_eagle3"},
                                                           {"medusa", "specscope/tv_medusa"},
                                                           {"sps", "specscope/tinyvocab_draft_small"}};
  EXPECT_EQ(drafters("specscope/tinyvocab_target"), tiny_target);
  // The Ollama model (hidden 64, vocabulary 3007) gets the head for its size, from another store.
  const std::map<std::string, std::string> ollama_tiny = {{"eagle1", "specscope/wide_eagle1"},
                                                          {"eagle2", "specscope/wide_eagle1"}};
  EXPECT_EQ(drafters("tiny:latest"), ollama_tiny);
  // The Medusa head names tinyvocab_target as its base, but its hidden size is 64: refused there, and not offered
  // to the models its sizes would fit either, since it says whose head it is.
  for (const auto& p : found().pairings)
    EXPECT_NE(found().models[p.drafter].name, "specscope/wide_medusa") << "offered to " << found().models[p.target].name;
  const std::string note = by_name("specscope/wide_medusa").pairing_note;
  EXPECT_NE(note.find("hidden size is 64"), std::string::npos) << note;
  // The wide EAGLE head never pairs with the 16-wide target; the tiny heads pair with nothing 64 wide.
  for (const auto& p : found().pairings) {
    const Found& t = found().models[p.target];
    const Found& d = found().models[p.drafter];
    if (d.facts.is_head()) EXPECT_EQ(t.facts.hidden_size, d.facts.target_hidden) << t.name << " <- " << d.name;
  }
  // The same model in another dtype has as many parameters: never its own SpS drafter.
  EXPECT_EQ(drafters("someone/tiny2:q8").count("sps"), 0u);
}

TEST_F(Discovery_, OllamaLayersAreRead) {
  const Found& t = by_name("tiny:latest");
  EXPECT_NE(t.ollama_template.find("{{ .Prompt }}"), std::string::npos);
  EXPECT_EQ(t.ollama_system, "You are tiny.");
  EXPECT_EQ(nlohmann::json::parse(t.ollama_params)["num_ctx"], 256);
  EXPECT_TRUE(by_name("someone/tiny2:q8").ollama_template.empty());
}

TEST_F(Discovery_, ADiscoveredTargetGetsItsDraftersAsAFamily) {
  const FamilyManifest m = family_from_discovery(found(), index_of("specscope/tinyvocab_target"));
  EXPECT_TRUE(same_path(m.entry("eagle2")->head, by_name("specscope/tv_eagle1").path));
  EXPECT_TRUE(same_path(m.entry("eagle3")->head, by_name("specscope/tv_eagle3").path));
  EXPECT_TRUE(same_path(m.entry("medusa")->head, by_name("specscope/tv_medusa").path));
  EXPECT_TRUE(same_path(m.entry("sps")->draft, by_name("specscope/tinyvocab_draft_small").path));
  EXPECT_TRUE(m.entry("eagle2")->alternatives.empty());  // heads have none
  EXPECT_EQ(m.entry("streaming"), nullptr);
  // Through FamilyManifest::find_for, as the lane resolver asks, with the stores as the user's environment.
  stores().use_as_environment();
  const auto via = FamilyManifest::find_for(stores().snapshot("specscope/tinyvocab_target"));
  ASSERT_TRUE(via.has_value());
  EXPECT_EQ(via->servable_methods(), m.servable_methods());
  // A folder outside every store is never scanned for.
  EXPECT_FALSE(FamilyManifest::find_for(test::fixture("models/tinyvocab_target")).has_value());
}

// Every draft model that fits a target beyond the preferred one is an alternative for tree=auto to choose among.
TEST_F(Discovery_, EveryOtherFittingDraftModelIsAnAlternative) {
  int targets_with_alternatives = 0;
  for (size_t t = 0; t < found().models.size(); ++t) {
    const FamilyManifest m = family_from_discovery(found(), t);
    const FamilyEntry* sps = m.entry("sps");
    if (!sps) continue;
    std::vector<std::string> others;
    for (const Pairing* p : found().drafters_of(t))
      if (std::find(p->methods.begin(), p->methods.end(), "sps") != p->methods.end() &&
          found().models[p->drafter].path != sps->draft)
        others.push_back(found().models[p->drafter].path);
    EXPECT_EQ(sps->alternatives, others) << found().models[t].name;
    targets_with_alternatives += !others.empty();
  }
  EXPECT_GT(targets_with_alternatives, 0);  // the stores hold a target with several drafters
}

// Discovery and resolution only read: every file, link and folder is as it was (content hashes of every file,
// sizes, modification times, permissions).
TEST_F(Discovery_, NothingInTheStoresChanges) {
  auto snapshot = [&] {
    std::map<std::string, std::string> state;
    for (auto it = fs::recursive_directory_iterator(stores().home); it != fs::recursive_directory_iterator(); ++it) {
      struct stat st {};
      ::lstat(it->path().c_str(), &st);
      std::string s = std::to_string(st.st_mode) + " " + std::to_string(st.st_size) + " " +
                      std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
      if (S_ISREG(st.st_mode)) s += " " + sha256_hex(test::store_fixture_detail::slurp(it->path()));
      state[it->path().string()] = s;
    }
    return state;
  };
  const auto before = snapshot();
  const Discovery again = discover(stores().roots());
  for (const auto& m : again.models) resolve_model_spec(m.spec, stores().roots());
  EXPECT_EQ(snapshot(), before);
}

// A folder that cannot be read is one problem; everything else is still listed. Tests run as root, and root reads
// a chmod 000 folder anyway, so the scan runs in a child process that has given up root (setuid to nobody).
TEST_F(Discovery_, AnUnreadableFolderIsOneProblem) {
  const std::string locked = stores().locked_folder;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::chmod(locked.c_str(), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    std::string out;
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      out = "SKIP cannot drop root (setuid to nobody refused)";
    } else {
      const Discovery d = discover(stores().roots());
      nlohmann::json j = {{"models", nlohmann::json::array()}, {"problems", nlohmann::json::array()}};
      for (const auto& m : d.models) j["models"].push_back(m.spec);
      for (const auto& p : d.problems) j["problems"].push_back(p.line());
      out = j.dump();
    }
    if (::write(fds[1], out.data(), out.size()) < 0) _exit(3);
    _exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::chmod(locked.c_str(), 0755);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  if (out.rfind("SKIP", 0) == 0) GTEST_SKIP() << out;
  const auto j = nlohmann::json::parse(out);
  std::vector<std::string> locked_problems;
  for (const auto& p : j["problems"])
    if (p.get<std::string>().find(locked) != std::string::npos) locked_problems.push_back(p);
  ASSERT_EQ(locked_problems.size(), 1u) << j.dump(1);
  EXPECT_NE(locked_problems[0].find("cannot read"), std::string::npos) << locked_problems[0];
  EXPECT_EQ(j["problems"].size(), found().problems.size() + 1);
  EXPECT_EQ(j["models"].size(), found().models.size() - 1);  // all but the one inside the locked folder
}

TEST_F(Discovery_, ModelSpecsResolve) {
  const auto r = stores().roots();
  const std::string blob = by_name("tiny:latest").path;
  EXPECT_EQ(resolve_model_spec("ollama:tiny", r), blob);
  EXPECT_EQ(resolve_model_spec("ollama:tiny:latest", r), blob);
  EXPECT_EQ(resolve_model_spec("ollama:library/tiny", r), blob);
  EXPECT_EQ(resolve_model_spec("ollama:registry.ollama.ai/library/tiny:latest", r), blob);
  EXPECT_EQ(resolve_model_spec("ollama:someone/tiny2:q8", r), by_name("someone/tiny2:q8").path);
  const std::string main = stores().snapshot("specscope/tinyvocab_target");
  const std::string old = stores().snapshot("specscope/tinyvocab_target", test::ModelStores::kOldCommit);
  EXPECT_TRUE(same_path(resolve_model_spec("hf:specscope/tinyvocab_target", r), main));
  EXPECT_TRUE(same_path(resolve_model_spec("hf:specscope/tinyvocab_target@main", r), main));
  EXPECT_TRUE(same_path(resolve_model_spec("hf:specscope/tinyvocab_target@2222222", r), old));
  EXPECT_TRUE(same_path(resolve_model_spec(std::string("hf:specscope/tinyvocab_target@") + test::ModelStores::kOldCommit, r), old));
  EXPECT_TRUE(same_path(resolve_model_spec("hf:someone/mistral-GGUF", r),
                        stores().snapshot("someone/mistral-GGUF") + "/mistral_f32.f16.gguf"));
  EXPECT_TRUE(same_path(resolve_model_spec("lmstudio:legacy/qwen-GGUF", r),
                        stores().lmstudio_legacy + "/legacy/qwen-GGUF/qwen2_f32.f32.gguf"));
  EXPECT_TRUE(same_path(resolve_model_spec("lmstudio:lmstudio-community/spm-GGUF/llama_spm_tied_f32.q4_1.gguf", r),
                        stores().lmstudio + "/lmstudio-community/spm-GGUF/llama_spm_tied_f32.q4_1.gguf"));
  EXPECT_EQ(resolve_model_arg("some/plain/path", r), "some/plain/path");
  // Every failure names the spec and what is wrong, in one line.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"ollama:nope", "no such model"},
      {"ollama:missing", "is missing"},
      {"ollama:../passwd", "'..'"},
      {"ollama:../../etc/passwd", "expected ollama:NAME"},
      {"ollama:a/b/c/d", "expected ollama:NAME"},
      {"hf:specscope/tinyvocab_target@ffffffff", "no snapshot"},
      {"hf:specscope/nothere", "not in the Hugging Face cache"},
      {"hf:specscope/broken", "dangling link"},
      {"hf:tinyvocab_target", "expected hf:ORG/NAME"},
      {"lmstudio:lmstudio-community/spm-GGUF", "name one"},
      {"lmstudio:lmstudio-community/spm-GGUF/../x.gguf", "'..'"},
      {"hf:", "names no model"},
  };
  for (const auto& [spec, says] : bad) {
    try {
      resolve_model_spec(spec, r);
      ADD_FAILURE() << spec << " resolved";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), spec);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << spec << ": " << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

// Where each tool keeps its models, and which variable overrides what (as the tools themselves read them).
TEST(StoreRoots, FollowTheToolsOwnEnvironmentVariables) {
  const char* vars[] = {"HOME", "OLLAMA_MODELS", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"};
  std::map<std::string, std::optional<std::string>> saved;
  for (const char* v : vars) saved[v] = std::getenv(v) ? std::optional<std::string>(std::getenv(v)) : std::nullopt;
  for (const char* v : vars) ::unsetenv(v);
  ::setenv("HOME", "/h", 1);
  StoreRoots r = StoreRoots::from_environment();
  EXPECT_EQ(r.ollama.front(), "/h/.ollama/models");
  EXPECT_EQ(r.lmstudio, (std::vector<std::string>{"/h/.lmstudio/models", "/h/.cache/lm-studio/models"}));
  EXPECT_EQ(r.hf, std::vector<std::string>{"/h/.cache/huggingface/hub"});
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  EXPECT_EQ(StoreRoots::from_environment().hf, std::vector<std::string>{"/x/huggingface/hub"});
  ::setenv("HF_HOME", "/hf", 1);
  EXPECT_EQ(StoreRoots::from_environment().hf, std::vector<std::string>{"/hf/hub"});
  ::setenv("HF_HUB_CACHE", "/cache", 1);
  EXPECT_EQ(StoreRoots::from_environment().hf, std::vector<std::string>{"/cache"});
  ::setenv("OLLAMA_MODELS", "/o", 1);
  EXPECT_EQ(StoreRoots::from_environment().ollama, std::vector<std::string>{"/o"});  // and nowhere else
  EXPECT_TRUE(StoreRoots::from_environment().contains("/o/blobs/sha256-x"));
  EXPECT_FALSE(StoreRoots::from_environment().contains("/other/o/blobs"));
  for (const auto& [v, value] : saved) value ? (void)::setenv(v.c_str(), value->c_str(), 1) : (void)::unsetenv(v.c_str());
}

TEST(OllamaManifest, ParsesLayersAndRefusesWhatIsNotAManifest) {
  const std::string d = "sha256:" + std::string(64, 'b');
  const auto m = parse_ollama_manifest(
      R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":")" + d + R"(","size":7},
                    {"mediaType":"application/vnd.ollama.image.template; name=chat","digest":")" + d + R"("}]})",
      "m");
  ASSERT_EQ(m.layers.size(), 2u);
  EXPECT_EQ(m.layer("model")->size, 7u);
  EXPECT_EQ(m.layer("template")->kind, "template");
  EXPECT_EQ(m.layer("params"), nullptr);
  EXPECT_EQ(ollama_blob_name(d, "m"), "sha256-" + std::string(64, 'b'));
  const std::vector<std::string> bad = {
      "", "[]", "{}", R"({"layers":{}})", R"({"layers":[1]})",
      R"({"layers":[{"mediaType":"application/vnd.ollama.image.model"}]})",
      R"({"layers":[{"mediaType":"x","digest":"sha256:../../../etc/passwd"}]})",
      R"({"layers":[{"mediaType":"x","digest":"sha256:)" + std::string(64, 'B') + R"("}]})",
      R"({"layers":[{"mediaType":"x","digest":"md5:)" + std::string(64, 'b') + R"("}]})",
      R"({"layers":[{"mediaType":"x","digest":")" + d + R"(","size":-1}]})",
      R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":")" + d +
          R"("},{"mediaType":"application/vnd.ollama.image.model","digest":")" + d + R"("}]})",
  };
  for (const auto& text : bad) EXPECT_THROW(parse_ollama_manifest(text, "m"), InputError) << text;
}

// A GGUF conversion and its Hugging Face source share a tokenizer; another tokenizer differs.
TEST(TokenizerFingerprint, SameAcrossFormatsDifferentAcrossTokenizers) {
  const std::string hf = tokenizer_json_fingerprint(test::fixture("models/llama_bytelevel_f32/tokenizer.json"));
  const ModelFacts gguf = probe_model(test::fixture("gguf_models/llama_bytelevel_f32.f32.gguf"));
  ASSERT_FALSE(hf.empty());
  EXPECT_EQ(hf, gguf.tokenizer_fingerprint);
  EXPECT_NE(hf, tokenizer_json_fingerprint(test::fixture("models/llama_spm_tied_f32/tokenizer.json")));
  EXPECT_EQ(tokenizer_json_fingerprint("/nonexistent/tokenizer.json"), "");
}

TEST(MemoryEstimate, KvCacheAndWeights) {
  ModelFacts f;
  f.num_layers = 3;
  f.kv_dim = 8;
  f.max_context = 256;
  f.size_bytes = 1000;
  f.copied_bytes = 24;
  // [layers][n_ctx][kv_dim] f32 keys and values, plus the transposed keys with rows rounded up to 16.
  EXPECT_EQ(cpu_kv_cache_bytes(f, 100), uint64_t(3 * 8 * (2 * 100 + 112) * 4));
  EXPECT_EQ(cpu_kv_cache_bytes(f, 0), cpu_kv_cache_bytes(f, 256));  // the default context: max_position_embeddings
  // DeepSeek's latent attention caches keys of the latent and the rotary key (8 here) and values of the latent (6).
  ModelFacts mla = f;
  mla.kv_value_dim = 6;
  EXPECT_EQ(cpu_kv_cache_bytes(mla, 100), uint64_t(3 * ((8 + 6) * 100 + 8 * 112) * 4));
  f.max_context = 131072;
  EXPECT_EQ(default_context(f.max_context), 4096);  // CpuContext caps its default at 4096
  const MemoryNeed n = model_memory(f, 4096);
  EXPECT_EQ(n.weights, 1024u);
  EXPECT_EQ(n.kv_cache, cpu_kv_cache_bytes(f, 4096));
  EXPECT_EQ(memory_shortfall(n, n.total(), 4096), "");
  const std::string s = memory_shortfall(n, n.total() - 1, 4096);
  EXPECT_NE(s.find("4096 tokens"), std::string::npos) << s;
  EXPECT_NE(s.find("available"), std::string::npos) << s;
  EXPECT_EQ(human_bytes(3 * (1ull << 30) + (1ull << 29)), "3.5 GiB");
}

// GPT-OSS's Hugging Face experts are copied out of the mapping: MXFP4 codes with their scales as ggml's blocks (17
// bytes a block for the 16 bytes of codes), the dense fused tensors as they are; a GGUF file's MXFP4 is read in place.
TEST(MemoryEstimate, CountsGptOssExpertCopies) {
  uint64_t mxfp4_gguf = 0, blocks = 0, dense = 0;
  const GgufFile g = GgufFile::open(test::fixture("gguf_models/gpt_oss_f32.mxfp4.gguf"));
  for (const auto& t : g.tensors())
    if (t.type == GgmlType::MXFP4) mxfp4_gguf += t.nbytes;
  const TensorStore mx = TensorStore::open_dir(test::fixture("models/gpt_oss_mxfp4"));
  for (const auto& [name, t] : mx.all())
    if (name.ends_with("_blocks")) blocks += t.nbytes();
  const TensorStore f32 = TensorStore::open_dir(test::fixture("models/gpt_oss_f32"));
  for (const auto& [name, t] : f32.all())
    if (name.ends_with("experts.gate_up_proj") || name.ends_with("experts.down_proj")) dense += t.nbytes();
  ASSERT_GT(mxfp4_gguf, 0u);
  ASSERT_GT(blocks, 0u);
  ASSERT_GT(dense, 0u);
  EXPECT_EQ(probe_model(test::fixture("gguf_models/gpt_oss_f32.mxfp4.gguf")).copied_bytes, 0u);
  EXPECT_EQ(probe_model(test::fixture("models/gpt_oss_mxfp4")).copied_bytes, blocks / 16 * 17);
  EXPECT_EQ(probe_model(test::fixture("models/gpt_oss_f32")).copied_bytes, dense);
  EXPECT_EQ(probe_model(test::fixture("models/qwen3moe_f32")).copied_bytes, 0u);  // experts bound in place
}

TEST(MemoryEstimate, ReadsMemAvailable) {
  const fs::path p = fs::temp_directory_path() / ("specscope_meminfo_" + std::to_string(::getpid()));
  std::ofstream(p) << "MemTotal:       24684096 kB\nMemFree:        10499020 kB\nMemAvailable:   22386784 kB\n";
  EXPECT_EQ(mem_available_bytes(p.string()), std::optional<uint64_t>(22386784ull * 1024));
  std::ofstream(p) << "MemTotal:       24684096 kB\n";
  EXPECT_EQ(mem_available_bytes(p.string()), std::nullopt);
  fs::remove(p);
  EXPECT_GT(mem_available_bytes().value_or(0), 0u);  // this machine's
}

}  // namespace
}  // namespace specscope
