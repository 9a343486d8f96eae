// specscope-cli compare as a race on the shipped family, with no drafter flags: the family manifest
// (assets/models/family.json) gives every method its drafter and Speculative Streaming its own target. Every
// lane is identical to its own target's vanilla reference, the JSON names both targets and every lane's options,
// `--lane` sets per-lane keys, bad lanes fail with one line naming the lane, and the recorded race replays to
// exactly the report the live race printed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "runs/tree_tuner.h"
#include "tests/session_test_support.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;

const std::string kFamily = SPECSCOPE_SOURCE_DIR "/assets/models";

std::string prompts_file(const std::string& name) {
  auto dir = test::fresh_dir(name);
  test::write_bytes(dir / "prompts.txt", "What does the word harbor mean?\nName three colours.\nHow do birds fly?\n");
  return (dir / "prompts.txt").string();
}

TEST(RaceCli, EveryMethodOnTheShippedFamilyIsIdenticalToItsOwnTargetsVanilla) {
  auto r = test::run_cli("compare --chat --methods sps,eagle1,eagle2,eagle3,medusa,streaming,lookahead,pld "
                         "--prompt-file " + prompts_file("race-all") + " --max-tokens 24 --json --no-record");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = test::json_in_output(r.out);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j.at("all_identical"), true);
  // Three targets: the base, Medusa-2's fine-tune of it for the medusa lane, the streaming model for the streaming
  // lane, in the order their lanes first name them.
  ASSERT_EQ(j.at("targets").size(), 3u);
  EXPECT_NE(j["targets"][0].at("path").get<std::string>().find("assets/models/base"), std::string::npos);
  EXPECT_NE(j["targets"][1].at("path").get<std::string>().find("assets/models/medusa2"), std::string::npos);
  EXPECT_NE(j["targets"][2].at("path").get<std::string>().find("assets/models/streaming"), std::string::npos);
  for (auto& t : j["targets"]) EXPECT_EQ(t.at("config_sha256").get<std::string>().size(), 64u);
  const json& agg = j.at("aggregate");
  // A reference per target first, then the lanes as given.
  std::vector<std::string> lanes;
  for (auto& a : agg) lanes.push_back(a.at("lane").get<std::string>());
  EXPECT_EQ(lanes, (std::vector<std::string>{"vanilla", "vanilla", "vanilla", "sps", "eagle1", "eagle2", "eagle3",
                                             "medusa", "streaming", "lookahead", "pld"}));
  for (auto& a : agg) {
    SCOPED_TRACE(a.at("lane").get<std::string>());
    EXPECT_EQ(a.at("prompts"), 3);
    EXPECT_EQ(a.at("identical_to_vanilla"), 3);
    EXPECT_GT(a.at("speedup_vs_vanilla").get<double>(), 0.0);
    // References come first, one per target in order; a lane runs on its method's own target where it has one.
    const size_t reference = size_t(&a - &agg[0]);
    const size_t target = a.at("reference") == true ? reference
                          : a.at("method") == "medusa"    ? 1
                          : a.at("method") == "streaming" ? 2
                                                          : 0;
    EXPECT_EQ(a.at("target").at("path"), j["targets"][target].at("path"));
  }
  // Drafters came from the manifest.
  EXPECT_NE(agg[5].at("head").get<std::string>().find("assets/models/eagle1"), std::string::npos);
  EXPECT_NE(agg[6].at("head").get<std::string>().find("assets/models/eagle3"), std::string::npos);
  EXPECT_NE(agg[7].at("head").get<std::string>().find("assets/models/medusa2/heads"), std::string::npos);
  EXPECT_NE(agg[3].at("draft").get<std::string>().find("assets/models/draft"), std::string::npos);
  // Every speculative lane drafted something: tau above one.
  for (size_t i = 3; i < agg.size(); ++i) EXPECT_GT(agg[i].at("tau").get<double>(), 1.0) << agg[i].at("lane");
}

// `run --method medusa` on the shipped base runs Medusa-2 on the fine-tune the family trained with its heads, and
// says so; a head named on the command line drafts for --model itself, with no note. The published tree: the family's
// tree=auto would first time a step-cost curve and calibrate (7 s here, 155 s under ASan), which this test is not about.
TEST(RaceCli, RunSaysWhenTheMethodRunsOnItsOwnTarget) {
  const std::string run =
      "run --chat --prompt 'Name three colours.' --max-tokens 4 --no-record --method medusa --tree published";
  auto own = test::run_cli(run);
  ASSERT_EQ(own.exit_code, 0) << own.out;
  EXPECT_NE(own.out.find("note: medusa runs on its own target "), std::string::npos) << own.out;
  EXPECT_NE(own.out.find("assets/models/medusa2"), std::string::npos) << own.out;
  auto named = test::run_cli(run + " --head " + kFamily + "/medusa");
  ASSERT_EQ(named.exit_code, 0) << named.out;
  EXPECT_EQ(named.out.find("runs on its own target"), std::string::npos) << named.out;
}

TEST(RaceCli, LanesCarryTheirOwnOptionsAndMethodsAllUsesTheManifest) {
  auto r = test::run_cli("compare --chat --methods all --lane 'eagle2:total-tokens=12,depth=3' "
                         "--prompt 'Name three colours.' --max-tokens 16 --json --no-record");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = test::json_in_output(r.out);
  ASSERT_TRUE(j.is_object()) << r.out;
  std::vector<std::string> lanes;
  for (auto& a : j.at("aggregate")) lanes.push_back(a.at("lane").get<std::string>());
  // all = every method the manifest serves (vanilla is the reference lane), then the --lane.
  EXPECT_EQ(lanes, (std::vector<std::string>{"vanilla", "vanilla", "vanilla", "sps", "eagle1", "eagle2", "eagle3",
                                             "medusa", "streaming", "lookahead", "pld",
                                             "eagle2 depth=3 total-tokens=12"}));
  const json& last = j["aggregate"].back();
  EXPECT_EQ(last.at("options"), json({{"depth", "3"}, {"total-tokens", "12"}}));
  EXPECT_EQ(last.at("identical_to_vanilla"), 1);
}

// tree=auto: the size is chosen on this machine (step-cost curve + calibration, cached in XDG_CACHE_HOME), the
// output stays identical to vanilla, and the recorded summary says what was chosen and what it should gain.
TEST(RaceCli, TreeAutoChoosesASizeAndStaysLossless) {
  auto dir = test::fresh_dir("tree-auto");
  const auto r = test::run_cli("compare --chat --methods sps,eagle2 --tree auto --prompt 'Name three colours.'"
                               " --max-tokens 16 --json --no-record",
                               "XDG_CACHE_HOME=" + (dir / "cache").string());
  const std::string& out = r.out;
  ASSERT_EQ(r.exit_code, 0) << out;
  // sps: the shipped family lists a second drafter, so the choice names the drafter beside its sizes.
  EXPECT_NE(out.find("[tree auto] lane 1 (sps): confidence-threshold="), std::string::npos) << out;
  EXPECT_NE(out.find(",draft=draft"), std::string::npos) << out;
  EXPECT_NE(out.find("[tree auto] lane 2 (eagle2): depth="), std::string::npos) << out;
  json j = test::json_in_output(out);
  ASSERT_TRUE(j.is_object()) << out;
  EXPECT_EQ(j.at("all_identical"), true);
  const json& agg = j.at("aggregate");
  EXPECT_TRUE(agg[1].at("options").contains("gamma")) << agg[1];
  EXPECT_FALSE(agg[1].at("options").contains("tree"));  // resolved to sizes before the run
  EXPECT_TRUE(agg[2].at("options").contains("total-tokens")) << agg[2];
  // The curve was cached, and so were the choices unless the machine was busy while they were calibrated (a loaded
  // CI machine), which the run then says: a disturbed calibration is never cached.
  EXPECT_TRUE(std::filesystem::exists(dir / "cache" / "specscope" / "step_cost"));
  if (!std::filesystem::exists(dir / "cache" / "specscope" / "tree_choice"))
    EXPECT_NE(out.find("this choice is not cached"), std::string::npos) << out;
}

// A family that lists another drafter beside its own: tree=auto calibrates every gamma with each and runs the pair it
// expects fastest, and the run reports the drafter it ran and every pair it tried.
TEST(RaceCli, TreeAutoChoosesAmongTheFamilysDrafters) {
  auto dir = test::fresh_dir("tree-auto-drafters");
  std::filesystem::create_directory_symlink(kFamily + "/base", dir / "base");
  std::filesystem::create_directory_symlink(kFamily + "/draft", dir / "draft");
  // The same weights in another folder (its files linked: the manifest's paths are resolved, links and all).
  std::filesystem::create_directory(dir / "draft-again");
  for (const auto& f : std::filesystem::directory_iterator(kFamily + "/draft"))
    std::filesystem::create_symlink(f.path(), dir / "draft-again" / f.path().filename());
  test::write_bytes(dir / "family.json", R"({"specscope_family": 1, "target": "base",
      "methods": {"sps": {"draft": "draft", "alternatives": ["draft-again"]}}})");
  const auto r = test::run_cli("run --chat --model " + (dir / "base").string() +
                                   " --method sps --tree auto --prompt 'Name three colours.' --max-tokens 16 --json"
                                   " --no-record",
                               "XDG_CACHE_HOME=" + (dir / "cache").string());
  const std::string& out = r.out;
  ASSERT_EQ(r.exit_code, 0) << out;
  // The choice names its drafter by folder.
  EXPECT_NE(out.find("[tree auto] lane 1 (sps): confidence-threshold="), std::string::npos) << out;
  EXPECT_NE(out.find(",draft=draft"), std::string::npos) << out;
  json summary;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("{", 0) == 0 && line.find("\"tree_auto\"") != std::string::npos) summary = json::parse(line);
  ASSERT_TRUE(summary.is_object()) << out;
  const json& tree = summary.at("tree_auto");
  // Each size (a gamma, and how confident a draft must be to go on) with each drafter, calibrated.
  std::map<std::string, int> trials_of;
  for (const auto& t : tree.at("trials"))
    ++trials_of[std::filesystem::path(t.at("options").at("draft").get<std::string>()).filename().string()];
  const int sizes = int(runs::tree_candidates(MethodSpec{"sps", "draft", "", {}}).size());  // with int8 forms
  EXPECT_EQ(trials_of["draft"], sizes) << tree;
  EXPECT_EQ(trials_of["draft-again"], sizes) << tree;
  const std::string chosen = tree.at("options").at("draft").get<std::string>();
  EXPECT_TRUE(std::filesystem::exists(chosen)) << tree;
  EXPECT_TRUE(tree.at("options").contains("gamma")) << tree;
}

// A cached choice whose vanilla calibration was disturbed (slower than the curve allows) is not used: tree=auto
// calibrates again and says so.
TEST(RaceCli, TreeAutoCalibratesAgainOverADisturbedCachedChoice) {
  auto dir = test::fresh_dir("tree-auto-disturbed");
  const std::string cli = "XDG_CACHE_HOME=" + (dir / "cache").string() + " SPECSCOPE_LOG=info " +
                          std::string(SPECSCOPE_CLI) +
                          " run --backend cpu --chat --method pld --tree auto --prompt 'Name three colours.'"
                          " --max-tokens 12 --no-record 2>&1";
  auto run = [&] {
    FILE* p = popen(cli.c_str(), "r");
    std::string out;
    char buf[4096];
    for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    EXPECT_EQ(p ? pclose(p) : -1, 0) << out;
    return out;
  };
  // A calibration the machine disturbed is not cached: run until one is (a busy CI machine may need several).
  const auto choices = dir / "cache" / "specscope" / "tree_choice";
  std::filesystem::path cached;
  for (int attempt = 0; attempt < 6 && cached.empty(); ++attempt) {
    run();
    if (std::filesystem::exists(choices))
      for (const auto& e : std::filesystem::directory_iterator(choices)) cached = e.path();
  }
  ASSERT_FALSE(cached.empty()) << "no undisturbed calibration in six runs";
  // A sound cached choice is used. Under a load that changes from run to run, a cached calibration can itself look
  // disturbed beside a quieter moment and is then redone (and cached again), so one of five runs must use it
  // (ctest -j2 beside the heavier tests once needed more than three).
  bool used = false;
  for (int attempt = 0; attempt < 5 && !used; ++attempt) used = run().find("calibrating again") == std::string::npos;
  EXPECT_TRUE(used) << "five runs in a row calibrated again over the cached choice";
  json j = json::parse(std::ifstream(cached));
  j["vanilla_ms"] = 1000.0;  // as if calibrated while a build ran
  std::ofstream(cached) << j.dump();
  const std::string out = run();
  EXPECT_NE(out.find("the cached choice was calibrated with vanilla at 1000.000 ms a token"), std::string::npos) << out;
  EXPECT_NE(out.find("calibrating again"), std::string::npos) << out;
}

// On the CPU backend tree=auto is the default for a tunable method when no size is given; `--tree published` or a
// size flag keeps the paper's tree. The JSON summary carries the expected figures beside the measured ones.
TEST(RaceCli, TreeAutoIsTheCpuDefaultUnlessASizeOrPublishedIsGiven) {
  auto dir = test::fresh_dir("tree-auto-default");
  const std::string cli = "XDG_CACHE_HOME=" + (dir / "cache").string() + " " + std::string(SPECSCOPE_CLI);
  auto summary = [&](const std::string& extra) {
    const std::string cmd = cli + " run --backend cpu --chat --method pld --prompt 'Name three colours.'"
                                  " --max-tokens 12 --json --no-record" + extra + " 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    EXPECT_EQ(p ? pclose(p) : -1, 0) << out;
    std::istringstream in(out);
    std::string line, last;
    while (std::getline(in, line))
      if (!line.empty()) last = line;
    return json::parse(last, nullptr, false);
  };
  const json by_default = summary("");
  ASSERT_TRUE(by_default.contains("tree_auto")) << by_default;
  const json& t = by_default.at("tree_auto");
  EXPECT_TRUE(t.at("options").contains("num-draft")) << t;
  EXPECT_GT(t.at("expected_tokens_per_second").get<double>(), 0);
  EXPECT_GT(t.at("expected_vanilla_tokens_per_second").get<double>(), 0);
  EXPECT_NEAR(t.at("expected_speedup").get<double>(),
              t.at("expected_tokens_per_second").get<double>() / t.at("expected_vanilla_tokens_per_second").get<double>(),
              1e-9);
  EXPECT_FALSE(summary(" --tree published").contains("tree_auto"));
  EXPECT_FALSE(summary(" --num-draft 4").contains("tree_auto"));
}

TEST(RaceCli, BadLanesFailWithOneLineNamingTheLane) {
  const std::string tiny = test::fixture("models/tinyvocab_target");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--lane 'eagle2:bogus=1'", "lane 1 (eagle2:bogus=1): unknown key 'bogus'"},
      {"--model " + tiny + " --lane 'eagle2:head=" + kFamily + "/eagle1'", "lane 1 (eagle2)"},
      {"--methods pld --lane 'streaming:model=" + kFamily + "/base'", "lane 2 (streaming)"},
      {"--methods pld,nosuch", "lane 2 (nosuch): unknown method"},
  };
  for (const auto& [args, want] : cases) {
    SCOPED_TRACE(args);
    auto r = test::run_cli("compare " + args + " --prompt hi --max-tokens 4 --no-record");
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;  // one line
  }
}

// The report without the progress, "[tree auto]" and "[session N recorded]" lines and spdlog's "[12:34:56.789]
// [warning] ..." lines (stderr, merged by run_cli): a live race beside a busy machine warns that its tree=auto
// calibration is not cached, and a replay has nothing to calibrate.
std::string report_only(const std::string& out) {
  std::istringstream in(out);
  std::string line, kept;
  while (std::getline(in, line)) {
    const bool log_line = line.size() > 1 && line[0] == '[' && std::isdigit(static_cast<unsigned char>(line[1]));
    if (!log_line && line.rfind("[compare]", 0) != 0 && line.rfind("[session", 0) != 0 &&
        line.rfind("[tree auto]", 0) != 0)
      kept += line + "\n";
  }
  return kept;
}

TEST(RaceCli, ARecordedRaceReplaysExactlyWhatTheLiveRacePrinted) {
  auto dir = test::fresh_dir("race-replay");
  const std::string db = " --session-db " + (dir / "s.db").string();
  const std::string args = "compare --chat --methods eagle2,medusa,streaming --prompt-file " + prompts_file("race-rp") +
                           " --max-tokens 16";
  for (const std::string mode : {"", " --json"}) {
    SCOPED_TRACE(mode);
    auto live = test::run_cli(args + mode + db);
    ASSERT_EQ(live.exit_code, 0) << live.out;
    const std::string id = mode.empty() ? "1" : "2";
    auto replay = test::run_cli("sessions replay " + id + mode + db);
    ASSERT_EQ(replay.exit_code, 0) << replay.out;
    EXPECT_FALSE(report_only(live.out).empty());
    EXPECT_EQ(report_only(replay.out), report_only(live.out));
    // tree=auto sized every lane here (the CPU's default): its expectation is reported beside what each measured,
    // live and replayed alike.
    if (mode.empty()) {
      EXPECT_NE(live.out.find("tree auto eagle2: expected tau "), std::string::npos) << live.out;
      EXPECT_NE(live.out.find("tree auto medusa: expected tau "), std::string::npos) << live.out;
    } else {
      const auto j = test::json_in_output(live.out);
      ASSERT_TRUE(j.is_object()) << live.out;
      for (const auto& a : j.at("aggregate"))
        if (a.at("method") != "vanilla") {
          ASSERT_TRUE(a.contains("tree_auto")) << a.dump();
          EXPECT_GT(a["tree_auto"].at("expected_tau").get<double>(), 0.9) << a.dump();
          EXPECT_GT(a["tree_auto"].at("expected_speedup").get<double>(), 0.0) << a.dump();
          // The calibration itself: every size tried, the chosen one among them, and vanilla's rate beside them.
          const json& trials = a["tree_auto"].at("trials");
          ASSERT_FALSE(trials.empty()) << a.dump();
          EXPECT_EQ(std::count_if(trials.begin(), trials.end(),
                                  [&](const json& t) { return t.at("options") == a["tree_auto"].at("options"); }),
                    1) << a.dump();
          for (const json& t : trials) EXPECT_GT(t.at("verify_ms").get<double>(), 0.0) << t.dump();
          EXPECT_GT(a["tree_auto"].at("expected_vanilla_tokens_per_second").get<double>(), 0.0) << a.dump();
        }
    }
  }
}

// tree=auto calibrates on a job's first eight prompts; a race over more reports the lane measured on just those beside
// its expectation, so that a gap is seen to be the other prompts' or the estimate's.
TEST(RaceCli, TreeAutoIsAlsoMeasuredOnThePromptsItCalibratedOn) {
  auto dir = test::fresh_dir("race-calibration-prompts");
  std::string prompts;
  for (const char* p : {"What does the word harbor mean?", "Name three colours.", "How do birds fly?",
                        "What is a verb?", "Define the word ocean.", "What does abandon mean?", "Name a fruit.",
                        "What is rain?", "What does the word anchor mean?", "Describe a tree."})
    prompts += std::string(p) + "\n";
  test::write_bytes(dir / "prompts.txt", prompts);
  const std::string args = "compare --chat --methods pld --prompt-file " + (dir / "prompts.txt").string() +
                           " --max-tokens 12 --no-record";
  auto r = test::run_cli(args + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json j = test::json_in_output(r.out);
  ASSERT_TRUE(j.is_object()) << r.out;
  ASSERT_EQ(j.at("prompts").size(), 10u);
  // The first eight prompts' runs, summed as the report sums a lane.
  std::map<std::string, std::array<double, 4>> first;  // lane: tau x steps, steps, new tokens, decode seconds
  for (size_t p = 0; p < 8; ++p)
    for (const auto& run : j["prompts"][p].at("runs")) {
      auto& f = first[run.at("lane").get<std::string>()];
      f[0] += std::round(run.at("tau").get<double>() * run.at("steps").get<double>());
      f[1] += run.at("steps").get<double>();
      f[2] += run.at("new_tokens").get<double>();
      f[3] += run.at("decode_seconds").get<double>();
    }
  for (const auto& a : j.at("aggregate")) {
    if (a.at("method") != "pld") continue;
    ASSERT_TRUE(a.contains("tree_auto")) << a.dump();
    ASSERT_TRUE(a["tree_auto"].contains("calibration_prompts")) << a.dump();
    const auto& c = a["tree_auto"]["calibration_prompts"];
    const auto& lane = first.at(a.at("lane").get<std::string>());
    const auto& ref = first.at("vanilla");
    EXPECT_EQ(c.at("prompts").get<int>(), 8);
    EXPECT_NEAR(c.at("tau").get<double>(), lane[0] / lane[1], 1e-9);
    EXPECT_NEAR(c.at("speedup_vs_vanilla").get<double>(), (lane[2] / lane[3]) / (ref[2] / ref[3]), 1e-9);
  }
  auto text = test::run_cli(args);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("on the 8 prompts it calibrated on)"), std::string::npos) << text.out;
  // Eight prompts or fewer: the calibration's prompts are the race's, and nothing more is said.
  auto three = test::run_cli("compare --chat --methods pld --prompt-file " + prompts_file("race-calibration-three") +
                             " --max-tokens 12 --no-record");
  ASSERT_EQ(three.exit_code, 0) << three.out;
  EXPECT_NE(three.out.find("tree auto pld: expected tau "), std::string::npos) << three.out;
  EXPECT_EQ(three.out.find("prompts it calibrated on"), std::string::npos) << three.out;
}

}  // namespace
}  // namespace specscope
