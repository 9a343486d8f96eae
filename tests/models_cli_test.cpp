// The CLI on discovered models (tests/model_store_fixtures.h, built at test time and made the environment's HOME):
// `models` lists exactly what is there and says each broken thing in one line; `--model ollama:tiny` generates what
// the same GGUF file does by path; a discovered target races its discovered heads with no drafter flags; bad specs,
// a head for another hidden size and a context that does not fit in memory are one line and exit code 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "engine/model/family_manifest.h"
#include "tests/model_store_fixtures.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

namespace fs = std::filesystem;

class ModelsCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stores_ = new test::ModelStores(test::build_model_stores(
        (fs::temp_directory_path() / ("specscope_models_cli_" + std::to_string(::getpid()))).string()));
    stores_->use_as_environment();  // run_cli's children inherit it
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(stores_->home, ec);
    delete stores_;
  }
  static const test::ModelStores& stores() { return *stores_; }

 private:
  static test::ModelStores* stores_;
};
test::ModelStores* ModelsCli::stores_ = nullptr;

std::vector<std::string> lines_starting(const std::string& out, const std::string& prefix) {
  std::vector<std::string> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) v.push_back(line);
  return v;
}

void expect_one_line_exit_2(const test::CommandResult& r, const std::string& says) {
  EXPECT_EQ(r.exit_code, 2) << r.out;
  std::string t = r.out;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  EXPECT_EQ(t.find('\n'), std::string::npos) << "more than one line:\n" << r.out;
  EXPECT_NE(t.find(says), std::string::npos) << t;
}

// The generated text: stdout before the footer run prints on stderr ("[vanilla | ...]").
std::string text_of(const std::string& out) {
  std::string t = out.substr(0, out.find("[vanilla |"));
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

TEST_F(ModelsCli, ListsEveryModelWithItsDraftersAndEachProblemInOneLine) {
  const auto r = test::run_cli("models --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = test::json_in_output(r.out);
  ASSERT_TRUE(j.is_object()) << r.out;
  std::set<std::string> specs;
  for (const auto& m : j["models"]) specs.insert(m["spec"].get<std::string>());
  const std::set<std::string> expected = {
      "ollama:tiny:latest", "ollama:someone/tiny2:q8", "lmstudio:locked/hidden-GGUF/qwen2_f32.f32.gguf",
      "lmstudio:lmstudio-community/spm-GGUF/llama_spm_tied_f32.q4_1.gguf",
      "lmstudio:lmstudio-community/spm-GGUF/llama_spm_tied_f32.q8_0.gguf", "lmstudio:other/mamba-GGUF/bad_arch.gguf",
      "lmstudio:legacy/qwen-GGUF/qwen2_f32.f32.gguf", "hf:someone/mistral-GGUF/mistral_f32.f16.gguf",
      "hf:specscope/tinyvocab_draft_small", "hf:specscope/tinyvocab_target",
      "hf:specscope/tinyvocab_target@222222222222", "hf:specscope/tv_eagle1", "hf:specscope/tv_eagle3",
      "hf:specscope/tv_medusa", "hf:specscope/wide_eagle1", "hf:specscope/wide_medusa"};
  EXPECT_EQ(specs, expected);
  EXPECT_EQ(j["problems"].size(), 5u);
  for (const auto& m : j["models"]) {
    SCOPED_TRACE(m["spec"].get<std::string>());
    for (const char* k : {"source", "name", "architecture", "parameters", "dtype", "size_bytes", "loads"})
      EXPECT_TRUE(m.contains(k)) << k;
    EXPECT_EQ(m["loads"].get<bool>(), m["problem"].is_null());
    if (m["spec"] == "hf:specscope/tinyvocab_target") {
      std::set<std::string> drafters;
      for (const auto& d : m["drafters"]) drafters.insert(d["spec"].get<std::string>());
      EXPECT_EQ(drafters, (std::set<std::string>{"hf:specscope/tv_eagle1", "hf:specscope/tv_eagle3",
                                                 "hf:specscope/tv_medusa", "hf:specscope/tinyvocab_draft_small"}));
      EXPECT_EQ(m["architecture"], "LlamaForCausalLM");
      EXPECT_EQ(m["dtype"], "f32");
      EXPECT_GT(m["memory"]["kv_cache_bytes"].get<uint64_t>(), 0u);
    }
    if (m["spec"] == "ollama:tiny:latest") EXPECT_EQ(m["ollama"]["params"]["num_ctx"], 256);
    if (m["spec"] == "lmstudio:other/mamba-GGUF/bad_arch.gguf") {
      EXPECT_FALSE(m["loads"].get<bool>());
      EXPECT_NE(m["problem"].get<std::string>().find("mamba"), std::string::npos);
    }
  }
  // Text: every model on a line of its own; on stderr one warning line per broken thing, exit code still 0.
  const auto t = test::run_cli("models");
  ASSERT_EQ(t.exit_code, 0) << t.out;
  for (const auto& m : j["models"])
    EXPECT_NE(t.out.find(m["name"].get<std::string>() + " "), std::string::npos) << m["name"];
  EXPECT_EQ(lines_starting(t.out, "warning: ").size(), 5u) << t.out;
  EXPECT_NE(t.out.find("drafter for eagle1,eagle2: hf:specscope/tv_eagle1"), std::string::npos) << t.out;
}

TEST_F(ModelsCli, RunOnAnOllamaModelGeneratesWhatTheFileDoes) {
  const std::string flags = " --prompt 'Hello there' --max-tokens 12 --no-record";
  const auto by_path = test::run_cli("run --model " + test::fixture("gguf_models/llama_bytelevel_f32.f32.gguf") + flags);
  ASSERT_EQ(by_path.exit_code, 0) << by_path.out;
  ASSERT_FALSE(text_of(by_path.out).empty());
  for (const char* spec : {"ollama:tiny", "ollama:tiny:latest", "ollama:library/tiny"}) {
    const auto r = test::run_cli(std::string("run --model ") + spec + flags);
    ASSERT_EQ(r.exit_code, 0) << spec << ": " << r.out;
    EXPECT_EQ(text_of(r.out), text_of(by_path.out)) << spec;
  }
  const auto info = test::run_cli("info --model ollama:tiny --json");
  ASSERT_EQ(info.exit_code, 0) << info.out;
  EXPECT_EQ(test::json_in_output(info.out)["format"], "gguf");
}

// The discovered heads serve the discovered target with no --head/--draft: every method they make servable races,
// and every greedy output equals vanilla's.
TEST_F(ModelsCli, ADiscoveredTargetRacesItsDiscoveredDraftersWithNoFlags) {
  const auto r = test::run_cli(
      "compare --model hf:specscope/tinyvocab_target --methods all --prompt 'abc' --max-tokens 8 --no-record --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = test::json_in_output(r.out);
  ASSERT_TRUE(j.is_object()) << r.out;
  std::map<std::string, std::string> drafter;  // method -> head or draft
  for (const auto& a : j["aggregate"])
    drafter[a["method"]] = a["head"].get<std::string>() + a["draft"].get<std::string>();
  for (const char* m : {"sps", "eagle1", "eagle2", "eagle3", "medusa"}) ASSERT_TRUE(drafter.count(m)) << m;
  EXPECT_TRUE(same_path(drafter["eagle2"], stores().snapshot("specscope/tv_eagle1")));
  EXPECT_TRUE(same_path(drafter["eagle3"], stores().snapshot("specscope/tv_eagle3")));
  EXPECT_TRUE(same_path(drafter["medusa"], stores().snapshot("specscope/tv_medusa")));
  EXPECT_TRUE(same_path(drafter["sps"], stores().snapshot("specscope/tinyvocab_draft_small")));
  EXPECT_TRUE(j["all_identical"].get<bool>());
  // Specs work for the drafters too, and lane keys.
  const auto lane = test::run_cli(
      "compare --model hf:specscope/tinyvocab_target --lane 'eagle3:head=hf:specscope/tv_eagle3' --prompt abc "
      "--max-tokens 4 --no-record");
  EXPECT_EQ(lane.exit_code, 0) << lane.out;
}

TEST_F(ModelsCli, BadInputIsOneLineAndExitCode2) {
  const std::string run = "run --prompt hi --max-tokens 4 --no-record --model ";
  expect_one_line_exit_2(test::run_cli(run + "ollama:nope"), "ollama:nope: no such model");
  expect_one_line_exit_2(test::run_cli(run + "ollama:missing"), "is missing");
  expect_one_line_exit_2(test::run_cli(run + "hf:specscope/tinyvocab_target@ffffffff"), "no snapshot");
  expect_one_line_exit_2(test::run_cli(run + "hf:specscope/broken"), "dangling link");
  expect_one_line_exit_2(test::run_cli(run + "lmstudio:lmstudio-community/spm-GGUF"), "name one");
  expect_one_line_exit_2(test::run_cli(run + "lmstudio:other/mamba-GGUF"), "mamba");
  // A head for another hidden size, given explicitly, is refused by its loader.
  expect_one_line_exit_2(
      test::run_cli(run + "hf:specscope/tinyvocab_target --method eagle2 --head hf:specscope/wide_eagle1"),
      "hidden size");
}

// The memory check: a context whose KV cache cannot fit is refused before anything loads, in one line naming the
// model and both numbers.
TEST_F(ModelsCli, AContextThatDoesNotFitInMemoryIsRefused) {
  const auto r = test::run_cli("run --model ollama:tiny --prompt hi --max-tokens 4 --no-record --context 1000000000");
  expect_one_line_exit_2(r, "available (MemAvailable)");
  EXPECT_NE(r.out.find("KV cache"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/blobs/sha256-"), std::string::npos) << r.out;
  // The same model at a context that fits runs.
  EXPECT_EQ(test::run_cli("run --model ollama:tiny --prompt hi --max-tokens 4 --no-record --context 64").exit_code, 0);
}

}  // namespace
}  // namespace specscope
