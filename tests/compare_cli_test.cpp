// specscope-cli compare end to end on the tiny-vocabulary fixtures: greedy outputs of every method equal
// vanilla's on several prompts, the aggregate lists vanilla first then the methods as given, tau is sane
// (exactly gamma + 1 for a chain drafted by the target itself), the text mode ends with the verdict, and an
// unknown method name is an input error (exit 2) naming it.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;

std::string quoted(const std::string& s) { return "'" + s + "'"; }
const std::string kTarget = quoted(test::fixture("models/tinyvocab_target"));
const std::string kDraft = quoted(test::fixture("models/tinyvocab_draft"));
constexpr int kPrompts = 3;

// Three prompts, one a JSONL line; repetitive text so prompt lookup finds something to draft. One file per
// test: ctest may run the tests in parallel processes.
std::string prompt_file() {
  const std::string path = ::testing::TempDir() + "compare_cli_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt";
  std::ofstream(path) << "the cat sat on the mat\n{\"prompt\": \"hello hello hello\"}\nabcabcabc abc\n";
  return quoted(path);
}

// --no-record: these tests check the report, not the session store.
std::string compare_args(const std::string& draft, const std::string& methods) {
  return "compare --model " + kTarget + " --draft " + draft + " --methods " + methods +
         " --gamma 3 --max-tokens 20 --no-record --prompt-file " + prompt_file();
}

std::vector<std::string> methods_of(const json& agg) {
  std::vector<std::string> out;
  for (auto& a : agg) out.push_back(a.at("method").get<std::string>());
  return out;
}

TEST(CompareCli, JsonGreedyEveryMethodIdenticalToVanilla) {
  auto r = test::run_cli(compare_args(kDraft, "sps,pld") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = test::json_in_output(r.out);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j.at("all_identical"), true);
  // Where it ran: the backend and the device, as bench's JSON names them.
  EXPECT_EQ(j.at("backend"), "cpu");
  EXPECT_FALSE(j.at("device").get<std::string>().empty());
  const json& agg = j.at("aggregate");
  // Vanilla runs first although not listed: it is the reference.
  EXPECT_EQ(methods_of(agg), (std::vector<std::string>{"vanilla", "sps", "pld"}));
  for (auto& a : agg) {
    SCOPED_TRACE(a.at("method").get<std::string>());
    EXPECT_EQ(a.at("prompts"), kPrompts);
    EXPECT_EQ(a.at("identical_to_vanilla"), kPrompts);
    EXPECT_GE(a.at("tau").get<double>(), 1.0);  // every step commits at least its bonus token
    EXPECT_GT(a.at("new_tokens").get<int>(), 0);
  }
  EXPECT_EQ(agg[0].at("tau").get<double>(), 1.0);  // vanilla: one token per forward
  EXPECT_EQ(agg[0].at("target_forwards"), agg[0].at("new_tokens"));
  // Per prompt: one run per method, each flagged identical.
  // ... and carrying its output's digest (what runs on two backends are compared by): the same for every run
  // of a prompt, since their outputs are identical, and different between the prompts.
  ASSERT_EQ(j.at("prompts").size(), size_t(kPrompts));
  std::set<std::string> digests;
  for (auto& p : j.at("prompts")) {
    ASSERT_EQ(p.at("runs").size(), 3u);
    const std::string digest = p.at("runs")[0].at("output_sha256");
    EXPECT_EQ(digest.size(), 64u);
    digests.insert(digest);
    for (auto& run : p.at("runs")) {
      EXPECT_EQ(run.at("identical_to_vanilla"), true);
      EXPECT_EQ(run.at("output_sha256"), digest);
    }
  }
  EXPECT_EQ(digests.size(), size_t(kPrompts));
}

TEST(CompareCli, SelfDraftChainHasTauGammaPlusOne) {
  // The target drafting for itself is always right under greedy: every step accepts all gamma = 3 drafts
  // plus the bonus. Listing vanilla explicitly (and last) still runs it once, first.
  auto r = test::run_cli(compare_args(kTarget, "sps,vanilla") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = test::json_in_output(r.out);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j.at("all_identical"), true);
  const json& agg = j.at("aggregate");
  ASSERT_EQ(methods_of(agg), (std::vector<std::string>{"vanilla", "sps"}));
  EXPECT_EQ(agg[1].at("identical_to_vanilla"), kPrompts);
  EXPECT_EQ(agg[1].at("tau").get<double>(), 4.0);
  EXPECT_EQ(agg[1].at("acceptance_by_depth"), json({1.0, 1.0, 1.0}));
  EXPECT_LT(agg[1].at("target_forwards").get<int>(), agg[0].at("target_forwards").get<int>());
}

TEST(CompareCli, TextModePrintsTableAndVerdict) {
  auto r = test::run_cli(compare_args(kDraft, "pld,sps"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("verdict: all greedy outputs identical to vanilla"), std::string::npos) << r.out;
  // One table row per method, each ending with the same-as-vanilla column "matched/prompts".
  for (const std::string m : {"vanilla", "pld", "sps"}) {
    const size_t row = r.out.find("\n" + m + " ");
    ASSERT_NE(row, std::string::npos) << m << "\n" << r.out;
    const std::string line = r.out.substr(row + 1, r.out.find('\n', row + 1) - row - 1);
    const std::string all = std::to_string(kPrompts) + "/" + std::to_string(kPrompts);
    EXPECT_EQ(line.substr(line.size() - all.size()), all) << line;
  }
}

TEST(CompareCli, UnknownMethodIsAnInputError) {
  auto r = test::run_cli("compare --model " + kTarget + " --methods vanilla,nosuchmethod --prompt hi --max-tokens 4 --no-record");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("nosuchmethod"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unknown method"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace specscope
