// The run library (runs/) and what it stands on: the method registry, the family manifest, lane parsing and
// resolution, and the JobRunner's reference runs, speedups, verdicts and recording — including the three ways
// the app and the CLI used to disagree (backend/device recorded, speedup against lane 1, statistics computed
// in three places), each pinned here against the one copy left.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include "engine/cpu/weight_form.h"
#include "engine/methods/factory.h"
#include "engine/methods/method_registry.h"
#include "engine/model/backend.h"
#include "engine/model/family_manifest.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "runs/medusa_tree.h"
#include "runs/lane_resolver.h"
#include "runs/model_turns.h"
#include "runs/run_statistics.h"
#include "runs/runner.h"
#include "runs/step_cost.h"
#include "runs/trace_store.h"
#include "runs/tree_tuner.h"
#include "sessions/reader.h"
#include "tests/session_test_support.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

namespace fs = std::filesystem;
const std::string kTarget = test::fixture("models/llama_bytelevel_f32");
const std::string kDraft = test::fixture("models/llama_bytelevel_bf16");

template <typename F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// ---- the method registry -------------------------------------------------------------------------------------

TEST(MethodRegistry, EveryMethodAndEveryOptionIsAcceptedByTheFactory) {
  // The registry is the only list of options: the factory must take each with its published default, and
  // refuse anything else. Vanilla, pld and lookahead build on any target; the others are checked by name.
  auto target = Model::load(kTarget);
  for (const auto& info : method_registry()) {
    SCOPED_TRACE(info.name);
    EXPECT_FALSE(info.title.empty());
    for (const auto& o : info.options) EXPECT_FALSE(o.help.empty()) << o.key;
    if (info.needs != MethodNeed::Nothing && info.needs != MethodNeed::DraftModel) continue;
    MethodSpec spec;
    spec.name = info.name;
    spec.draft_path = kDraft;
    for (const auto& o : info.options)
      if (!o.default_value.empty() && o.kind != OptionKind::File) spec.options[o.key] = o.default_value;
    EXPECT_NO_THROW(make_method(spec, *target));
    spec.options["no-such-option"] = "1";
    const std::string err = input_error([&] { make_method(spec, *target); });
    EXPECT_NE(err.find("no-such-option"), std::string::npos);
    EXPECT_NE(err.find("is not an option of " + info.name), std::string::npos) << err;
  }
}

TEST(MethodRegistry, AnotherMethodsOptionIsRefused) {
  auto target = Model::load(kTarget);
  MethodSpec spec;
  spec.name = "pld";
  spec.options["gamma"] = "3";  // sps's
  EXPECT_NE(input_error([&] { make_method(spec, *target); }).find("it takes max-ngram, min-ngram, num-draft"),
            std::string::npos);
  EXPECT_NE(input_error([&] { method_info("nosuch"); }).find("available: vanilla, sps"), std::string::npos);
}

// ---- the family manifest -------------------------------------------------------------------------------------

fs::path family_dir(const std::string& name, const std::string& manifest) {
  auto dir = test::fresh_dir(name);
  fs::create_directories(dir / "base");
  fs::create_directories(dir / "heads");
  test::write_bytes(dir / "family.json", manifest);
  return dir;
}

TEST(FamilyManifest, ShippedFamilyServesEveryMethod) {
  auto m = FamilyManifest::find_for(SPECSCOPE_SOURCE_DIR "/assets/models/base");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->servable_methods(), known_methods());
  EXPECT_TRUE(same_path(m->entry("eagle2")->head, SPECSCOPE_SOURCE_DIR "/assets/models/eagle1"));
  EXPECT_TRUE(same_path(m->entry("eagle3")->head, SPECSCOPE_SOURCE_DIR "/assets/models/eagle3"));
  EXPECT_TRUE(same_path(m->entry("streaming")->model, SPECSCOPE_SOURCE_DIR "/assets/models/streaming"));
  EXPECT_TRUE(same_path(m->entry("sps")->draft, SPECSCOPE_SOURCE_DIR "/assets/models/draft"));
  ASSERT_EQ(m->entry("sps")->alternatives.size(), 1u);  // the two-layer drafter tree=auto may choose on a CPU
  EXPECT_TRUE(same_path(m->entry("sps")->alternatives[0], SPECSCOPE_SOURCE_DIR "/assets/models/draft-small"));
  // It serves base only: the streaming model next to it has no manifest of its own.
  EXPECT_FALSE(FamilyManifest::find_for(SPECSCOPE_SOURCE_DIR "/assets/models/streaming").has_value());
}

TEST(FamilyManifest, BadManifestsNameTheFileAndTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not valid JSON"},
      {R"({"target": "base"})", "specscope_family"},
      {R"({"specscope_family": 1})", "needs \"target\""},
      {R"({"specscope_family": 1, "target": "base", "methods": {"eagle9": {}}})", "unknown method 'eagle9'"},
      {R"({"specscope_family": 1, "target": "base", "methods": {"sps": {"head": "heads"}}})", "needs a draft model"},
      {R"({"specscope_family": 1, "target": "base", "methods": {"eagle2": {"hed": "heads"}}})", "unknown key"},
      {R"({"specscope_family": 1, "target": "base", "methods": {"eagle2": {"options": {"gamma": 3}}}})",
       "'gamma' is not an option of eagle2"},
      {R"({"specscope_family": 1, "target": "base", "methods": {"eagle2": {"head": "h", "alternatives": ["g"]}}})",
       "only a draft model's entry"},
      {R"({"specscope_family": 1, "target": "base", "methods": {"sps": {"draft": "d", "alternatives": "e"}}})",
       "must be an array of paths"},
      {R"({"specscope_family": 1, "target": "base", "methods": {"sps": {"alternatives": ["e"]}}})",
       "alternatives to what?"},
      {R"({"specscope_family": 1, "target": "base", "methods": {"vanilla": {"model": "m"}}})",
       "vanilla runs the family's target"},
      {R"({"specscope_family": 1, "target": "base", "methods": {"medusa": {"model": "m"}}})",
       "comes with the drafter trained for it (key \"head\")"},
  };
  int i = 0;
  for (const auto& [text, want] : cases) {
    SCOPED_TRACE(text);
    auto dir = family_dir("family-bad-" + std::to_string(i++), text);
    const std::string err = input_error([&] { FamilyManifest::find_for((dir / "base").string()); });
    EXPECT_NE(err.find((dir / "family.json").string()), std::string::npos) << err;
    EXPECT_NE(err.find(want), std::string::npos) << err;
  }
}

TEST(FamilyManifest, AppliesOnlyToItsTargetAndResolvesRelativePaths) {
  auto dir = family_dir("family-ok", R"({"specscope_family": 1, "target": "base",
      "methods": {"eagle2": {"head": "heads", "options": {"total-tokens": 30}}}})");
  auto m = FamilyManifest::find_for((dir / "base").string());
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(same_path(m->entry("eagle2")->head, (dir / "heads").string()));
  EXPECT_EQ(m->entry("eagle2")->options.at("total-tokens"), "30");
  fs::create_directories(dir / "other");
  EXPECT_FALSE(FamilyManifest::find_for((dir / "other").string()).has_value());
}

TEST(FamilyManifest, AMethodMayNameItsOwnTargetBesideItsDrafter) {
  // Medusa-2: the base fine-tuned together with its heads is the target those heads draft for.
  auto dir = family_dir("family-own-target", R"({"specscope_family": 1, "target": "base",
      "methods": {"medusa": {"model": "tuned", "head": "heads"}, "eagle2": {"head": "heads"}}})");
  auto m = FamilyManifest::find_for((dir / "base").string());
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(same_path(m->entry("medusa")->model, (dir / "tuned").string()));
  runs::LaneDefaults d;
  d.target = (dir / "base").string();
  auto lanes = runs::resolve_lanes({runs::parse_lane("medusa"), runs::parse_lane("eagle2")}, d);
  ASSERT_EQ(lanes.size(), 2u);
  EXPECT_TRUE(same_path(lanes[0].target, (dir / "tuned").string()));
  EXPECT_TRUE(same_path(lanes[0].method.head_path, (dir / "heads").string()));
  EXPECT_TRUE(same_path(lanes[1].target, (dir / "base").string()));  // the others keep the family's target
  // The lane's own model key still wins.
  EXPECT_TRUE(same_path(runs::resolve_lanes({runs::parse_lane("medusa:model=/x/m")}, d)[0].target, "/x/m"));
  // Heads named by the lane or a flag (Medusa-1's, say) draft for the job's target, not the family's fine-tune.
  EXPECT_TRUE(same_path(runs::resolve_lanes({runs::parse_lane("medusa:head=/x/h")}, d)[0].target, d.target));
  runs::LaneDefaults flagged = d;
  flagged.head = "/x/h";
  EXPECT_TRUE(same_path(runs::resolve_lanes({runs::parse_lane("medusa")}, flagged)[0].target, d.target));
  // A drafter of the wrong kind is still refused.
  auto bad = family_dir("family-own-target-bad", R"({"specscope_family": 1, "target": "base",
      "methods": {"medusa": {"model": "tuned", "draft": "heads"}}})");
  EXPECT_NE(input_error([&] { FamilyManifest::find_for((bad / "base").string()); }).find("not a \"draft\""),
            std::string::npos);
}

TEST(FamilyManifest, AlternativeDraftersReachTheLaneUnlessADraftIsNamed) {
  auto dir = family_dir("family-alternatives", R"({"specscope_family": 1, "target": "base",
      "methods": {"sps": {"draft": "big", "alternatives": ["small", "tiny"]}}})");
  auto m = FamilyManifest::find_for((dir / "base").string());
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->entry("sps")->alternatives.size(), 2u);
  EXPECT_TRUE(same_path(m->entry("sps")->alternatives[0], (dir / "small").string()));
  runs::LaneDefaults d;
  d.target = (dir / "base").string();
  auto lanes = runs::resolve_lanes({runs::parse_lane("sps"), runs::parse_lane("sps:draft=/x/d")}, d);
  ASSERT_EQ(lanes.size(), 2u);
  EXPECT_TRUE(same_path(lanes[0].method.draft_path, (dir / "big").string()));
  EXPECT_EQ(lanes[0].method.draft_alternatives.size(), 2u);
  EXPECT_TRUE(lanes[1].method.draft_alternatives.empty());  // the drafter the user named is the one that runs
  d.draft = "/x/d";
  EXPECT_TRUE(runs::resolve_lanes({runs::parse_lane("sps")}, d)[0].method.draft_alternatives.empty());
}

TEST(TreeTuner, EverySizeWithEveryDrafterAndTheChoiceSetsTheDrafter) {
  MethodSpec spec{"sps", "/m/big", "", {}, {"/m/small", "/m/big"}};
  const auto c = runs::tree_candidates(spec);
  const auto one = runs::tree_candidates(MethodSpec{"sps", "/m/big", "", {}});  // one drafter's candidates
  ASSERT_EQ(c.size(), 2 * one.size());  // the spec's own drafter listed again counts once
  EXPECT_EQ(c.front().at("draft"), "/m/big");
  EXPECT_EQ(c.back().at("draft"), "/m/small");
  const auto sizes = runs::tree_candidates("sps");
  const auto last_size = sizes.back();
  const auto small = c[c.size() / 2 + sizes.size() - 1];  // the small drafter's last size, as loaded
  EXPECT_EQ(small.at("draft"), "/m/small");
  EXPECT_EQ(small.at("gamma"), last_size.at("gamma"));
  EXPECT_EQ(runs::tree_options_text(small),  // the drafter by its folder's name
            "confidence-threshold=" + small.at("confidence-threshold") + ",draft=small,gamma=" + small.at("gamma"));
  runs::apply_tree_options(spec, small);
  EXPECT_EQ(spec.draft_path, "/m/small");
  EXPECT_TRUE(spec.draft_alternatives.empty());
  EXPECT_FALSE(spec.options.count("draft"));
  EXPECT_EQ(spec.options.at("gamma"), small.at("gamma"));
  // Without alternatives (or for another method) the candidates are the sizes alone.
  EXPECT_EQ(runs::tree_candidates(MethodSpec{"sps", "/m/big", "", {}}).front().count("draft"), 0u);
  EXPECT_EQ(runs::tree_candidates(MethodSpec{"pld", "", "", {}, {"/m/small"}}).front().count("draft"), 0u);
}

// Where the CPU has the kernels, the chains cut by confidence are tried again with the drafter requantized to int8
// and again to int4; a spec that says which weights to use keeps them.
TEST(TreeTuner, SpsTriesTheDrafterRequantizedWhereTheCpuHasTheKernels) {
  const auto sizes = runs::tree_candidates("sps");
  size_t cut = 0;
  for (const auto& s : sizes) cut += s.at("confidence-threshold") != "0";
  ASSERT_GT(cut, 0u);
  const auto c = runs::tree_candidates(MethodSpec{"sps", "/m/d", "", {}});
  std::map<std::string, std::vector<std::map<std::string, std::string>>> by_form;
  for (const auto& x : c)
    if (x.count("draft-weights")) by_form[x.at("draft-weights")].push_back(x);
  size_t forms = 0;
  for (auto form : {cpu::WeightForm::Int8, cpu::WeightForm::Int4}) {
    const auto it = by_form.find(cpu::weight_form_name(form));
    const auto got = it == by_form.end() ? std::vector<std::map<std::string, std::string>>{} : it->second;
    if (!cpu::weight_form_supported(form)) {
      EXPECT_TRUE(got.empty());
      continue;
    }
    ++forms;
    ASSERT_EQ(got.size(), cut);
    for (const auto& x : got) {
      EXPECT_NE(x.at("confidence-threshold"), "0");
      auto plain = x;
      plain.erase("draft-weights");
      EXPECT_NE(std::find(sizes.begin(), sizes.end(), plain), sizes.end());  // the same size, as loaded
    }
    EXPECT_EQ(runs::tree_options_text(got.front()),
              "confidence-threshold=" + got.front().at("confidence-threshold") + ",draft-weights=" +
                  cpu::weight_form_name(form) + ",gamma=" + got.front().at("gamma"));
    MethodSpec applied{"sps", "/m/d", "", {}};
    runs::apply_tree_options(applied, got.front());
    EXPECT_EQ(applied.options.at("draft-weights"), cpu::weight_form_name(form));
  }
  EXPECT_EQ(by_form.size(), forms);  // no other form
  EXPECT_EQ(c.size(), sizes.size() + forms * cut);
  // Fixed by the spec: no requantized candidates (whichever form it named).
  for (const char* form : {"as-loaded", "int8", "int4"})
    EXPECT_EQ(runs::tree_candidates(MethodSpec{"sps", "/m/d", "", {{"draft-weights", form}}}).size(), sizes.size());
  EXPECT_EQ(runs::tree_candidates(MethodSpec{"pld", "", "", {}}).size(), runs::tree_candidates("pld").size());
}

// EAGLE-2/3: the small trees (at most 8 nodes) are tried again with the head's own layers on int4, where the CPU has
// the kernel; a spec that names the head's weights keeps them.
TEST(TreeTuner, EagleTriesItsSmallTreesWithAnInt4Head) {
  for (const char* m : {"eagle2", "eagle3"}) {
    const auto sizes = runs::tree_candidates(m);
    size_t small = 0;
    for (const auto& s : sizes) small += std::stoi(s.at("total-tokens")) <= 8;
    ASSERT_EQ(small, 4u);
    const auto c = runs::tree_candidates(MethodSpec{m, "", "/h", {}});
    size_t int4 = 0;
    for (const auto& x : c)
      if (x.count("head-weights")) {
        EXPECT_EQ(x.at("head-weights"), "int4");
        EXPECT_LE(std::stoi(x.at("total-tokens")), 8);
        ++int4;
      }
    EXPECT_EQ(int4, cpu::weight_form_supported(cpu::WeightForm::Int4) ? small : 0u) << m;
    EXPECT_EQ(c.size(), sizes.size() + int4);
    EXPECT_EQ(runs::tree_candidates(MethodSpec{m, "", "/h", {{"head-weights", "as-loaded"}}}).size(), sizes.size());
  }
}

// Medusa: its sparse trees of at most 16 nodes are tried again with int4 heads, where the CPU has the kernel; a spec
// that names the heads' weights keeps them, and a candidate without a sparse tree file is not doubled.
TEST(TreeTuner, MedusaTriesItsSmallSparseTreesWithInt4Heads) {
  std::vector<std::map<std::string, std::string>> sparse;
  for (int n : {4, 8, 16, 32, 64})
    sparse.push_back({{"tree-choices", "/cache/medusa_tree/k/sparse_" + std::to_string(n) + ".json"}});
  sparse.push_back({{"tree-choices", "/elsewhere/mine.json"}});
  const auto c = runs::medusa_tree_candidates(MethodSpec{"medusa", "", "/h", {}}, sparse);
  std::vector<std::string> int4;
  for (const auto& x : c)
    if (x.count("head-weights")) {
      EXPECT_EQ(x.at("head-weights"), "int4");
      int4.push_back(fs::path(x.at("tree-choices")).filename().string());
    }
  const bool kernel = cpu::weight_form_supported(cpu::WeightForm::Int4);
  const std::vector<std::string> small = {"sparse_4.json", "sparse_8.json", "sparse_16.json"};
  EXPECT_EQ(int4, kernel ? small : std::vector<std::string>());
  EXPECT_EQ(c.size(), sparse.size() + int4.size());
  for (const char* form : {"as-loaded", "int4"})
    EXPECT_EQ(runs::medusa_tree_candidates(MethodSpec{"medusa", "", "/h", {{"head-weights", form}}}, sparse).size(),
              sparse.size());
}

// ---- lanes ---------------------------------------------------------------------------------------------------

TEST(Lanes, ParseKeepsCommasInsideValues) {
  auto r = runs::parse_lane("sps:gamma=3,branching=2,2,1,draft=/x/y");
  EXPECT_EQ(r.method, "sps");
  EXPECT_EQ(r.keys.at("gamma"), "3");
  EXPECT_EQ(r.keys.at("branching"), "2,2,1");
  EXPECT_EQ(r.keys.at("draft"), "/x/y");
  EXPECT_NE(input_error([] { runs::parse_lane(":gamma=3"); }).find("METHOD"), std::string::npos);
  EXPECT_NE(input_error([] { runs::parse_lane("sps:2,gamma=3"); }).find("not key=value"), std::string::npos);
  EXPECT_NE(input_error([] { runs::parse_lane("sps:gamma=3,gamma=4"); }).find("twice"), std::string::npos);
}

TEST(Lanes, LaneKeysBeatFlagsWhichBeatTheManifest) {
  auto dir = family_dir("family-precedence", R"({"specscope_family": 1, "target": "base",
      "methods": {"eagle2": {"head": "heads", "options": {"depth": 3, "total-tokens": 30}},
                  "sps": {"draft": "heads"}}})");
  runs::LaneDefaults d;
  d.target = (dir / "base").string();
  d.options = {{"total-tokens", "40"}};
  auto lanes = runs::resolve_lanes({runs::parse_lane("eagle2"), runs::parse_lane("eagle2:total-tokens=50,head=/h"),
                                    runs::parse_lane("sps")},
                                   d);
  ASSERT_EQ(lanes.size(), 3u);
  EXPECT_TRUE(same_path(lanes[0].method.head_path, (dir / "heads").string()));
  EXPECT_EQ(lanes[0].method.options.at("depth"), "3");          // the manifest's
  EXPECT_EQ(lanes[0].method.options.at("total-tokens"), "40");  // the flag beats the manifest
  EXPECT_EQ(lanes[1].method.options.at("total-tokens"), "50");  // the lane beats the flag
  EXPECT_EQ(lanes[1].method.head_path, "/h");
  EXPECT_EQ(lanes[0].label, "eagle2");  // two eagle2 lanes: the second is told apart by its keys
  EXPECT_EQ(lanes[1].label, "eagle2 head=/h total-tokens=50");
  EXPECT_FALSE(lanes[2].method.options.count("total-tokens"));  // sps does not take it
  EXPECT_TRUE(same_path(lanes[2].target, d.target));
}

TEST(Lanes, BadLanesNameTheLane) {
  runs::LaneDefaults d;
  d.target = kTarget;
  auto err = [&](const std::string& lane) {
    return input_error([&] { runs::resolve_lanes({runs::parse_lane("pld"), runs::parse_lane(lane)}, d); });
  };
  EXPECT_NE(err("eagle2:bogus=1").find("lane 2 (eagle2:bogus=1): unknown key 'bogus'"), std::string::npos);
  EXPECT_NE(err("eagle2").find("lane 2 (eagle2): needs an EAGLE-1/2 head"), std::string::npos);
  EXPECT_NE(err("sps:head=/x").find("lane 2 (sps:head=/x): key 'head' does not apply"), std::string::npos);
  EXPECT_NE(err("nosuch").find("lane 2 (nosuch): unknown method"), std::string::npos);
  d.options = {{"gamma", "3"}};
  EXPECT_NE(err("lookahead").find("--gamma: is not an option of any method in this run (pld, lookahead)"),
            std::string::npos);
}

// ---- trees sized for the device ----------------------------------------------------------------------------

TEST(TreeTuner, StepCostInterpolatesAndExtrapolates) {
  runs::StepCost c;
  c.ms = {{1, 1.0}, {2, 1.2}, {4, 1.6}, {8, 2.4}};
  EXPECT_DOUBLE_EQ(c.at(1), 1.0);
  EXPECT_DOUBLE_EQ(c.at(3), 1.4);
  EXPECT_DOUBLE_EQ(c.at(6), 2.0);
  EXPECT_DOUBLE_EQ(c.at(12), 3.2);  // the last segment's slope, 0.2 ms per token
}

// A context whose forward takes a fixed time and counts what it was asked: enough to pin time_steps' warm-up.
class TimedFakeContext : public Context {
 public:
  explicit TimedFakeContext(double ms) : ms_(ms) {}
  void forward(const Batch& b, ForwardOutput&) override {
    const auto t0 = std::chrono::steady_clock::now();
    starts.push_back(t0);
    while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() < ms_) {
    }
    n_past_ += int(b.tokens.size());
  }
  void keep(std::span<const int>) override {}
  void truncate(int n) override { n_past_ = n; }
  int n_past() const override { return n_past_; }
  int n_ctx() const override { return 1024; }
  std::string backend_name() const override { return "fake"; }
  std::vector<std::chrono::steady_clock::time_point> starts;  // when each forward began

 private:
  double ms_;
  int n_past_ = 16;
};

TEST(StepCost, WarmsEachSizeUpForMillisecondsBeforeTimingIt) {
  // One untimed forward used to be all the warm-up, and the CPU's slower clock after heavy vector work then landed
  // on the first sizes timed; cheap forwards now repeat for kWarmMs first, dear ones still run once.
  TimedFakeContext cheap(0.5);
  const auto ms = runs::time_steps(cheap, {7, 8, 9}, 2, 16, 3);
  ASSERT_EQ(ms.size(), 3u);
  const size_t warm = cheap.starts.size() - 3;
  EXPECT_GE(warm, 2u);  // more than the one forward of before (~16 on a quiet machine)
  const double warm_ms = std::chrono::duration<double, std::milli>(cheap.starts[warm] - cheap.starts[0]).count();
  EXPECT_GE(warm_ms, runs::kWarmMs);
  EXPECT_EQ(cheap.n_past(), 16);  // every forward dropped again
  for (double t : ms) EXPECT_GE(t, 0.5);
  TimedFakeContext dear(runs::kWarmMs + 1);
  runs::time_steps(dear, {7}, 1, 16, 2);
  EXPECT_EQ(dear.starts.size(), 3u);  // one warm-up, two timed
}

TEST(ModelTurns, TimesTheTargetRightAfterTheOtherModelsForwardsAndLeavesBothCachesAsTheyWere) {
  TimedFakeContext target(0.2), other(0.05);
  const auto turns = runs::measure_model_turns(target, {5, 6, 7}, 16, other, {9}, 16, {1, 4}, 3, 10);
  ASSERT_EQ(turns.steps.size(), 2u);
  EXPECT_EQ(turns.steps[0].tokens, 1);
  EXPECT_EQ(turns.steps[1].tokens, 4);
  EXPECT_EQ(turns.other_forwards, 3);
  for (const auto& s : turns.steps) {
    EXPECT_GE(s.in_turns_ms, 0.2);
    EXPECT_GE(s.alone_ms, 0.2);
    EXPECT_GE(s.other_in_turns_ms, 0.05);
  }
  EXPECT_GE(turns.other_alone_ms, 0.05);
  EXPECT_EQ(target.n_past(), 16);
  EXPECT_EQ(other.n_past(), 16);
  // In turns: 3 forwards of the other model per round, 10 rounds per size, after its own alone timing (10 + warm-up).
  EXPECT_GE(other.starts.size(), size_t(2 * 3 * 10 + 10 + 1));
}

// A context whose forward costs more the longer it was left alone, as weights in a cache shared with other tenants
// do: base_ms plus decay x the time since its previous forward ended (up to 1 ms of it).
class DecayingFakeContext : public TimedFakeContext {
 public:
  DecayingFakeContext(double base_ms, double decay) : TimedFakeContext(0), base_ms_(base_ms), decay_(decay) {}
  void forward(const Batch& b, ForwardOutput& out) override {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const double away = last_end_ ? std::chrono::duration<double, std::milli>(t0 - *last_end_).count() : 0.0;
    const double ms = base_ms_ + decay_ * std::min(away, 1.0);
    TimedFakeContext::forward(b, out);  // records the start
    while (std::chrono::duration<double, std::milli>(clock::now() - t0).count() < ms) {
    }
    last_end_ = clock::now();
  }

 private:
  double base_ms_, decay_;
  std::optional<std::chrono::steady_clock::time_point> last_end_;
};

TEST(ModelTurns, TimesTheTargetAgainAfterAnIdleGapAsLongAsTheOtherModelsForwards) {
  // The target's cost grows with the time it was left alone; the other model's three forwards take >= 0.3 ms, so in
  // turns and after the same idle gap it costs >= 0.2 + 0.5 x 0.3 ms, and back to back (alone) less.
  DecayingFakeContext target(0.2, 0.5);
  TimedFakeContext other(0.1);
  const auto turns = runs::measure_model_turns(target, {5}, 16, other, {9}, 16, {1}, 3, 8);
  ASSERT_EQ(turns.steps.size(), 1u);
  const auto& s = turns.steps[0];
  EXPECT_GE(s.in_turns_ms, 0.2 + 0.5 * 0.3);
  EXPECT_GE(s.after_gap_ms, 0.2 + 0.5 * 0.3);
  EXPECT_EQ(target.n_past(), 16);
  // The gapped forward of each round starts at least the round's other-model time after the in-turns one ended.
  const size_t n = target.starts.size();
  ASSERT_GE(n, 16u);
  for (size_t i = n - 16; i < n; i += 2) {
    const double apart = std::chrono::duration<double, std::milli>(target.starts[i + 1] - target.starts[i]).count();
    EXPECT_GE(apart, 0.2 + 0.3) << "round " << (i - (n - 16)) / 2;
  }
}

// XDG_CACHE_HOME pointed at a fresh folder for one test, and put back after it (the caches of the test executable's
// environment, tests/test_environment.cpp, are left alone).
class ScopedCacheHome {
 public:
  explicit ScopedCacheHome(const std::string& name) : dir_(test::fresh_dir(name)) {
    if (const char* old = std::getenv("XDG_CACHE_HOME")) saved_ = old;
    setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  }
  ~ScopedCacheHome() {
    if (saved_) setenv("XDG_CACHE_HOME", saved_->c_str(), 1);
    else unsetenv("XDG_CACHE_HOME");
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  std::optional<std::string> saved_;
};

// A cached curve measured while the machine was busy is measured again: its one-token step far slower than a
// forward timed now. A sound cached curve is used as it is.
TEST(StepCost, ACachedCurveFromABusyMachineIsMeasuredAgain) {
  const ScopedCacheHome cache("step-cost-cache");
  const fs::path& dir = cache.dir();
  auto model = Model::load(kTarget);
  bool measured = false;
  const auto first = runs::cached_step_cost(*model, Backend::Cpu, &measured);
  EXPECT_TRUE(measured);
  runs::cached_step_cost(*model, Backend::Cpu, &measured);
  EXPECT_FALSE(measured);  // sound: used as cached
  const auto files = dir / "specscope" / "step_cost";
  ASSERT_TRUE(std::filesystem::exists(files));
  for (const auto& e : std::filesystem::directory_iterator(files)) {  // as if measured while a build ran
    nlohmann::json j = nlohmann::json::parse(std::ifstream(e.path()));
    for (auto& p : j.at("ms")) p[1] = p[1].get<double>() * 1000.0;
    std::ofstream(e.path()) << j.dump();
  }
  const auto again = runs::cached_step_cost(*model, Backend::Cpu, &measured);
  EXPECT_TRUE(measured);
  EXPECT_LT(again.at(1), first.at(1) * 100.0);
}

// A calibration on a busy machine is not cached, but the process that made it keeps it: the app's next chat answer
// must not wait for another calibration (it did, about a second each on the shipped family).
TEST(TreeTuner, ADisturbedCalibrationIsRememberedByTheProcessNotCached) {
  const ScopedCacheHome cache("tree-remembered");
  const fs::path& dir = cache.dir();
  auto model = Model::load(kTarget);
  runs::cached_step_cost(*model, Backend::Cpu);
  // A curve a thousand times faster than this machine: every calibration now reads as disturbed.
  for (const auto& e : fs::directory_iterator(dir / "specscope" / "step_cost")) {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(e.path()));
    for (auto& p : j.at("ms")) p[1] = p[1].get<double>() / 1000.0;
    std::ofstream(e.path()) << j.dump();
  }
  MethodSpec spec;
  spec.name = "pld";
  const std::vector<std::vector<int32_t>> prompts = {{1, 2, 3, 4, 1, 2, 3}};
  const runs::TreeChoice first = runs::tune_tree(*model, spec, Backend::Cpu, prompts, 6);
  EXPECT_EQ(first.source, "calibrated");
  EXPECT_FALSE(fs::exists(dir / "specscope" / "tree_choice")) << "a disturbed calibration was cached";
  const runs::TreeChoice second = runs::tune_tree(*model, spec, Backend::Cpu, prompts, 6);
  EXPECT_EQ(second.source, "remembered");
  EXPECT_EQ(second.options, first.options);
}

// Streaming's candidates on a model with 3 streams: the ones it can run are built, one asking for more streams than
// the model has is dropped, and the model's own defaults always build. A calibration then picks one of them.
TEST(TreeTuner, StreamingCandidatesAModelCannotRunAreSkipped) {
  const ScopedCacheHome cache("tree-streaming");
  auto model = Model::load(test::fixture("streaming/tiny"));
  MethodSpec spec{"streaming", "", "", {}};
  auto candidates = runs::tree_candidates("streaming");
  const size_t n = candidates.size();
  candidates.insert(candidates.begin() + 1,
                    std::map<std::string, std::string>{{"gamma", "9"}, {"stream-top-k", "1"}});  // more than it has
  const auto methods = runs::build_candidates(spec, *model, candidates);
  EXPECT_EQ(methods.size(), n);
  ASSERT_EQ(candidates.size(), n);
  for (const auto& c : candidates) EXPECT_TRUE(!c.count("gamma") || c.at("gamma") != "9");
  EXPECT_TRUE(candidates.back().empty());
  using Options = std::map<std::string, std::string>;
  std::vector<Options> broken = {Options{{"gamma", "9"}}, Options{{"stream-top-k", "99"}}};
  EXPECT_TRUE(runs::build_candidates(spec, *model, broken).empty());
  EXPECT_TRUE(broken.empty());
  const std::vector<std::vector<int32_t>> prompts = {{1, 2, 3, 4, 5, 6, 7}};
  const runs::TreeChoice choice = runs::tune_tree(*model, spec, Backend::Cpu, prompts, 6);
  const auto all = runs::tree_candidates("streaming");
  EXPECT_NE(std::find(all.begin(), all.end(), choice.options), all.end()) << runs::tree_options_text(choice.options);
  EXPECT_EQ(choice.trials.size(), all.size());
}

// The calibration windows are a systematic sample of the answers' tokens: a long answer holds more of them than a short
// one, each starts where a whole window fits in its answer, and a window's prompt never runs past the context.
TEST(TreeTuner, CalibrationWindowsSpreadOverTheAnswersTokens) {
  using W = std::vector<std::pair<size_t, int>>;
  auto windows = [](const std::vector<int>& lengths, size_t count) {
    W out;
    for (const auto& w : runs::calibration_windows(lengths, count, 24)) out.emplace_back(w.prompt, w.offset);
    return out;
  };
  // 96 + 96 + 0 + 32 = 224 tokens, four windows centred on tokens 28, 84, 140 and 196 of them.
  EXPECT_EQ(windows({96, 96, 0, 32}, 4), (W{{0, 16}, {0, 72}, {1, 32}, {3, 0}}))
      << "two windows in each long answer, the empty one none, the short one a window that fits it";
  // Equal answers: one window each, at offsets spread over their length.
  EXPECT_EQ(windows({48, 48, 48}, 3), (W{{0, 12}, {1, 12}, {2, 12}}));
  EXPECT_EQ(windows({10, 96}, 2), (W{{1, 4}, {1, 57}})) << "the 10-token answer is 10 of 106 tokens: no window";
  EXPECT_EQ(windows({10}, 1), (W{{0, 0}})) << "shorter than a window: at its start";
  EXPECT_EQ(windows({0, 0, 0}, 2), (W{{0, 0}, {1, 0}})) << "no answers at all: the prompts' starts";
  const auto many = runs::calibration_windows({96, 96, 96, 96, 96, 96, 96, 96}, 8, 24);
  ASSERT_EQ(many.size(), 8u);
  for (size_t k = 0; k < many.size(); ++k) EXPECT_EQ(many[k].prompt, k);

  const std::vector<int32_t> prompt = {100, 101, 102};
  std::vector<int32_t> answer(48);
  for (size_t t = 0; t < answer.size(); ++t) answer[t] = int32_t(t);
  auto offset = [&](int want, int n_ctx) {
    const auto w = runs::calibration_window_prompt(prompt, answer, want, 24, n_ctx);
    EXPECT_TRUE(std::equal(prompt.begin(), prompt.end(), w.begin())) << "the prompt comes first";
    EXPECT_TRUE(std::equal(w.begin() + 3, w.end(), answer.begin())) << "then the answer's first tokens";
    return int(w.size()) - 3;
  };
  EXPECT_EQ(offset(24, 512), 24);
  EXPECT_EQ(offset(60, 512), 48) << "never past the answer";
  EXPECT_EQ(offset(24, 40), 13) << "3 prompt + 13 + 24 new tokens fill a 40-token context";
  EXPECT_EQ(offset(24, 20), 0) << "no room: the window starts at the answer's start";
}

TEST(TreeTuner, ADisturbedCalibrationIsToldFromTheSteadyStateCurve) {
  runs::StepCost c;
  c.ms = {{1, 0.37}, {2, 0.42}};
  EXPECT_FALSE(runs::calibration_disturbed(0.40, c));  // a token's forward plus sampling and the step record
  EXPECT_FALSE(runs::calibration_disturbed(0.37 * runs::kDisturbedCalibration, c));
  EXPECT_TRUE(runs::calibration_disturbed(1.75, c));  // measured right after a build finished
  EXPECT_FALSE(runs::calibration_disturbed(1.75, runs::StepCost{}));  // no curve: nothing to judge by
}

TEST(TreeTuner, ChoosesTheMostExpectedTokensPerSecondAndSaysWhatLoses) {
  runs::StepCost c;
  c.ms = {{1, 1.0}, {2, 1.1}, {4, 1.3}, {8, 2.0}, {16, 4.0}};
  auto trial = [](const char* g, double tau, double verify_tokens, double draft_ms) {
    runs::TreeTrial t;
    t.options = {{"gamma", g}};
    t.tau = tau;
    t.verify_tokens = verify_tokens;
    t.draft_ms = draft_ms;
    return t;
  };
  // gamma=2: 2.2 tokens in 1.2 + 0.4 ms = 1375 tok/s; gamma=4: 2.8 in 1.6 + 0.8 = 1167; gamma=8: 3.2 in 3.0 + 1.6.
  auto choice = runs::choose_tree({trial("2", 2.2, 3, 0.4), trial("4", 2.8, 5, 0.8), trial("8", 3.2, 9, 1.6)}, c);
  EXPECT_EQ(choice.options.at("gamma"), "2");
  EXPECT_NEAR(choice.expected_speedup, 2.2 / 1.6, 1e-9);  // vanilla: 1 token per 1.0 ms
  EXPECT_EQ(choice.summary.find("loses"), std::string::npos) << choice.summary;
  // A drafter that costs more than the verification it saves loses on drafting...
  auto slow = runs::choose_tree({trial("1", 1.5, 2, 2.0)}, c);
  EXPECT_LT(slow.expected_speedup, 1.0);
  EXPECT_NE(slow.summary.find("loses on drafting"), std::string::npos) << slow.summary;
  // ... and a big tree with a free drafter on verification.
  auto big = runs::choose_tree({trial("8", 1.5, 16, 0.0)}, c);
  EXPECT_NE(big.summary.find("loses on verification"), std::string::npos) << big.summary;
  EXPECT_TRUE(runs::tree_tunable("eagle3"));
  EXPECT_TRUE(runs::tree_tunable("medusa"));  // sparse trees from its heads' accuracies (medusa_tree.h)
  EXPECT_TRUE(runs::tree_tunable("eagle1"));  // static trees from a chain of 2 to the published one
  MethodSpec e1;
  e1.name = "eagle1";
  EXPECT_FALSE(runs::tree_size_given(e1));
  e1.options["tree-choices"] = "my_tree.json";
  EXPECT_TRUE(runs::tree_size_given(e1));
  EXPECT_TRUE(runs::tree_tunable("streaming"));  // streams per step and candidates per stream
  EXPECT_FALSE(runs::tree_tunable("vanilla"));
  // `--tree published` reaches a lane only through its method's own `tree` option (lane_resolver.cpp applies a
  // global flag where the method lists it): a tunable method without one was tuned under `--tree published` (eagle1
  // was, until 2026-12-05).
  for (const MethodInfo& m : method_registry())
    if (runs::tree_tunable(m.name)) EXPECT_NE(find_option(m, "tree"), nullptr) << m.name;
  const auto st = runs::tree_candidates("streaming");
  ASSERT_FALSE(st.empty());
  EXPECT_TRUE(st.back().empty());  // the model's own, last
  MethodSpec streaming{"streaming", "", "", {}};
  EXPECT_FALSE(runs::tree_size_given(streaming));
  streaming.options["gamma"] = "2";
  EXPECT_TRUE(runs::tree_size_given(streaming));
  streaming.options = {{"total-tokens", "12"}};  // a key only some of its candidates set
  EXPECT_TRUE(runs::tree_size_given(streaming));
  EXPECT_EQ(runs::tree_candidates("sps").size(), 7u);  // gamma 1-4, then gamma 8 cut at three confidences
  MethodSpec sps{"sps", "/m/draft", "", {}};
  EXPECT_FALSE(runs::tree_size_given(sps));
  sps.options["confidence-threshold"] = "0.5";  // a size the tuner would choose: given, so tree=auto is not implied
  EXPECT_TRUE(runs::tree_size_given(sps));
}

// ---- the trace store -----------------------------------------------------------------------------------------

TEST(TraceStore, StepAtTokenFollowsCommittedTokens) {
  runs::TraceStore store;
  store.reset({runs::RunTrace{"sps"}});
  auto step = [](int n) {
    StepRecord r;
    r.committed.assign(size_t(n), 7);
    return r;
  };
  for (int n : {1, 3, 0, 2}) store.append(0, step(n), "");
  // Tokens: step 0 -> 0; step 1 -> 1..3; step 2 commits nothing; step 3 -> 4..5.
  const std::vector<int> want = {0, 1, 1, 1, 3, 3};
  for (int t = 0; t < 6; ++t) EXPECT_EQ(store.step_at_token(0, t), want[size_t(t)]) << t;
  EXPECT_EQ(store.step_at_token(0, 6), -1);
  EXPECT_EQ(store.step_at_token(1, 0), -1);
  EXPECT_EQ(store.lane(0).tokens(), 6);
}

// ---- the runner ----------------------------------------------------------------------------------------------

struct Recorded : runs::JobObserver {
  std::vector<runs::RunResult> finished;
  int steps = 0;
  bool step(const runs::RunKey&, const StepRecord&, const std::string&) override {
    ++steps;
    return true;
  }
  void run_finished(const runs::RunResult& r) override { finished.push_back(r); }
};

runs::Job job_with(const std::vector<std::string>& lane_texts, runs::Schedule schedule) {
  runs::LaneDefaults d;
  d.target = kTarget;
  d.draft = kDraft;
  std::vector<runs::LaneRequest> reqs;
  for (auto& t : lane_texts) reqs.push_back(runs::parse_lane(t));
  runs::Job job;
  job.lanes = runs::resolve_lanes(reqs, d);
  job.prompts = {{"Once upon a time", {}}, {"The sea is", {}}};
  job.options.max_tokens = 16;
  job.schedule = schedule;
  return job;
}

TEST(TreeTuner, VerificationAsMeasuredDecides) {
  runs::StepCost c;
  c.ms = {{1, 1.0}, {2, 1.1}, {4, 1.3}, {8, 2.0}, {16, 4.0}};
  auto trial = [](const char* g, double tau, double verify_tokens, double verify_ms, double draft_ms) {
    runs::TreeTrial t;
    t.options = {{"gamma", g}};
    t.tau = tau;
    t.verify_tokens = verify_tokens;
    t.verify_ms = verify_ms;
    t.draft_ms = draft_ms;
    return t;
  };
  // By the curve gamma=4 wins (2.8 tokens in cost(5) 1.475 + 0.4 ms); as measured its verification took 2.2 ms
  // beside the drafter, and gamma=2 (2.2 tokens in 1.2 + 0.4 ms) is faster. Vanilla measured 0.9 ms a token.
  const auto choice = runs::choose_tree({trial("2", 2.2, 3, 1.2, 0.4), trial("4", 2.8, 5, 2.2, 0.4)}, c, 0.9);
  EXPECT_EQ(choice.options.at("gamma"), "2");
  EXPECT_NEAR(choice.expected_speedup, (2.2 / 1.6) / (1 / 0.9), 1e-9);
  EXPECT_NEAR(choice.vanilla_tokens_per_second, 1000 / 0.9, 1e-9);
  EXPECT_NEAR(choice.trials[1].curve_verify_ms, 1.475, 1e-9);
  const auto alone = runs::choose_tree({trial("4", 2.8, 5, 2.2, 0.4)}, c, 0.9);
  EXPECT_NEAR(alone.expected_speedup, (2.8 / 2.6) / (1 / 0.9), 1e-9);
  // Without a measured vanilla the curve's cost(1) is the yardstick, and an unmeasured verification the curve's.
  const auto curve_only = runs::choose_tree({trial("4", 2.8, 5, 0, 0.4)}, c);
  EXPECT_NEAR(curve_only.expected_speedup, 2.8 / 1.875, 1e-9);
}

// Disagreement 2: the app measured speedup against lane 1 whatever its method. Every lane's speedup is now
// against its target's vanilla reference, run once per prompt even when vanilla is not a lane.
TEST(JobRunner, SpeedupIsAgainstTheTargetsVanillaReferenceNotLaneOne) {
  for (auto schedule : {runs::Schedule::Sequential, runs::Schedule::Interleaved}) {
    SCOPED_TRACE(schedule == runs::Schedule::Sequential ? "sequential" : "interleaved");
    runs::ModelCache cache;
    runs::JobRunner runner(cache);
    Recorded obs;
    auto result = runner.run(job_with({"pld", "sps:gamma=3"}, schedule), obs);
    ASSERT_EQ(result.targets.size(), 1u);
    EXPECT_EQ(result.targets[0].reference_lane, -1);  // no vanilla lane: a reference run of its own
    ASSERT_EQ(result.runs.size(), 6u);                // 2 prompts x (reference + 2 lanes)
    for (int p = 0; p < 2; ++p) {
      const runs::RunResult* ref = result.find(p, -1, 0);
      ASSERT_NE(ref, nullptr);
      EXPECT_EQ(ref->method.name, "vanilla");
      for (int l = 0; l < 2; ++l) {
        const runs::RunResult* run = result.find(p, l);
        ASSERT_NE(run, nullptr);
        EXPECT_DOUBLE_EQ(run->summary.speedup_vs_vanilla,
                         run->summary.tokens_per_second / ref->summary.tokens_per_second);
        ASSERT_TRUE(run->identical.has_value());
        EXPECT_TRUE(*run->identical);
        EXPECT_EQ(run->gen.tokens, ref->gen.tokens);
      }
      // Lane 1 is pld, a run of its own beside the reference (its speedup is its rate over the reference's, above,
      // which can come out at exactly 1 when pld drafts nothing on these short prompts and the two runs' steps sum
      // to the same microseconds, so the value itself is not checked against 1).
      EXPECT_NE(result.find(p, 0), ref);
      EXPECT_EQ(result.find(p, 0)->method.name, "pld");
    }
    EXPECT_EQ(obs.finished.size(), result.runs.size());
  }
}

// A chat run says, before its first step, how its reply marks its reasoning (reply_parts.h): the format of the
// target's own template, and whether the prompt opened the reasoning. A harmony reply's text keeps its markers (the
// special tokens' text), so that the app and the CLI can take the channels apart. Not a chat: plain.
TEST(JobRunner, AChatRunSaysHowItsReplyMarksItsReasoning) {
  struct Shapes : Recorded {
    std::vector<ReplyShape> shapes;
    int steps_before = -1;
    void reply_shaped(const runs::RunKey&, const ReplyShape& s) override {
      shapes.push_back(s);
      steps_before = steps;
    }
  };
  const struct {
    const char* template_file;
    ReplyFormat format;
    bool starts_in_reasoning;
  } cases[] = {{"gpt-oss.jinja", ReplyFormat::Harmony, false},
               {"deepseek-r1-distill.jinja", ReplyFormat::ThinkTags, true},
               {"qwen3.jinja", ReplyFormat::ThinkTags, false},
               {nullptr, ReplyFormat::Plain, false}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.template_file ? c.template_file : "not a chat");
    const fs::path dir = fs::path(testing::TempDir()) / "runs_reply_shape";
    fs::remove_all(dir);
    fs::copy(test::fixture("models/gpt_oss_f32"), dir);
    if (c.template_file)
      fs::copy_file(test::fixture(std::string("chat_templates/published/") + c.template_file),
                    dir / "chat_template.jinja");
    runs::LaneDefaults d;
    d.target = dir.string();
    runs::Job job;
    job.lanes = runs::resolve_lanes({runs::parse_lane("vanilla")}, d);
    job.prompts = {{"2+2?", {}}};
    job.chat = c.template_file != nullptr;
    job.references = false;
    job.options.max_tokens = 8;
    const bool harmony = c.format == ReplyFormat::Harmony;
    if (harmony) {
      // Sampled hot past the end of sequence until a reply commits a special token (the fixture's <|im_start|> or
      // <|im_end|>): its text must then be in the reply.
      job.options.max_tokens = 128;
      job.options.stop_at_eos = false;
      job.options.sampling.temperature = 2.f;
    }
    runs::ModelCache cache;
    const auto model = cache.get(dir.string());
    auto has_special = [&](const runs::RunResult& r) {
      return std::any_of(r.gen.tokens.begin(), r.gen.tokens.end(), [&](int32_t t) { return model->tokenizer().is_special(t); });
    };
    std::optional<runs::JobResult> result;
    Shapes obs;
    for (int seed = 0; seed < 64; ++seed) {
      job.options.sampling.seed = uint64_t(seed);
      runs::JobRunner runner(cache);
      obs = Shapes{};
      result = runner.run(job, obs);
      if (!harmony || (!result->runs.empty() && has_special(result->runs[0]))) break;
    }
    ASSERT_EQ(result->runs.size(), 1u);
    const runs::RunResult& run = result->runs[0];
    EXPECT_EQ(run.reply.format, c.format);
    EXPECT_EQ(run.reply.starts_in_reasoning, c.starts_in_reasoning);
    ASSERT_EQ(obs.shapes.size(), 1u);
    EXPECT_EQ(obs.shapes[0].format, c.format);
    EXPECT_EQ(obs.steps_before, 0) << "said before the first step";
    EXPECT_EQ(run.summary_json.contains("reply"), c.format != ReplyFormat::Plain);
    EXPECT_EQ(run.reply_parts.has_value(), c.format != ReplyFormat::Plain);
    if (c.starts_in_reasoning) {
      // DeepSeek-R1's prompt opened the thought and the fixture never closes it: every decoding step is thinking.
      ASSERT_TRUE(run.reply_parts);
      EXPECT_EQ(run.reply_parts->reasoning.steps, int(run.steps.size()) - 1);
      EXPECT_EQ(run.reply_parts->answer.steps, 0);
      EXPECT_EQ(run.summary_json["reply"]["reasoning"]["steps"], run.reply_parts->reasoning.steps);
    }
    EXPECT_EQ(run.gen.text, model->tokenizer().decode(run.gen.tokens, /*skip_special=*/!harmony));
    if (harmony) {
      ASSERT_TRUE(has_special(run)) << "no seed below 64 committed a special token";
      EXPECT_NE(run.gen.text, model->tokenizer().decode(run.gen.tokens, /*skip_special=*/true));
    }
  }
}

// Speculation while thinking and while answering: each decoding step counts for the part its first visible text
// belongs to; the prefill step for none; a step of markers only for the part it was in.
TEST(RunStatistics, ReplyPartsSplitTheStepsWhereTheThoughtEnds) {
  auto step = [](int index, int accepted) {
    StepRecord s;
    s.step = index;
    s.root_token = index == 0 ? -1 : 1;
    for (int d = 0; d < accepted; ++d) {
      DraftNode n;
      n.id = d;
      n.parent = d - 1;
      n.depth = d + 1;
      n.token = 10 + d;
      n.decision = NodeDecision::Accepted;
      s.nodes.push_back(n);
      s.accepted_path.push_back(d);
      s.committed.push_back(n.token);
    }
    s.bonus_token = 5;
    s.committed.push_back(5);
    s.timings = {100, 400, 20, 10};
    return s;
  };
  const std::vector<StepRecord> steps = {step(0, 0), step(1, 2), step(2, 3), step(3, 0), step(4, 1), step(5, 0)};
  const std::vector<std::string> pieces = {"<think>\n", "Hmm, ", "two and two.", "\n</think>", "\n\nFour", "."};
  const auto parts = runs::reply_part_statistics(steps, pieces, ReplyShape{ReplyFormat::ThinkTags, false});
  const std::vector<StepRecord> thinking = {steps[1], steps[2], steps[3]}, answering = {steps[4], steps[5]};
  EXPECT_EQ(parts.reasoning.steps, 3);
  EXPECT_EQ(parts.reasoning.tokens, 3 + 4 + 1);
  EXPECT_DOUBLE_EQ(parts.reasoning.tau, runs::compute_statistics(thinking).tau);
  EXPECT_DOUBLE_EQ(parts.reasoning.tokens_per_second, runs::compute_tokens_per_second(thinking));
  EXPECT_EQ(parts.answer.steps, 2);
  EXPECT_EQ(parts.answer.tokens, 2 + 1);
  EXPECT_DOUBLE_EQ(parts.answer.tau, runs::compute_statistics(answering).tau);
  EXPECT_GT(parts.reasoning.tau, parts.answer.tau);
}

TEST(JobRunner, AVanillaLaneIsItsTargetsReferenceAndRunsOnce) {
  runs::ModelCache cache;
  runs::JobRunner runner(cache);
  Recorded obs;
  auto result = runner.run(job_with({"pld", "vanilla"}, runs::Schedule::Sequential), obs);
  EXPECT_EQ(result.targets[0].reference_lane, 1);
  ASSERT_EQ(result.runs.size(), 4u);  // no extra reference run
  EXPECT_EQ(result.runs[0].key.lane, 1);  // the reference runs first
  EXPECT_DOUBLE_EQ(result.runs[0].summary.speedup_vs_vanilla, 1.0);
  EXPECT_EQ(result.find(0, -1, 0), result.find(0, 1));
}

// Disagreement 3: statistics computed in three places. Interleaved lanes report the tokens/s of their own
// steps' compute, the one formula the live lane figures also use.
TEST(JobRunner, InterleavedLaneThroughputIsItsOwnStepsCompute) {
  runs::ModelCache cache;
  runs::JobRunner runner(cache);
  Recorded obs;
  auto result = runner.run(job_with({"pld", "sps:gamma=3"}, runs::Schedule::Interleaved), obs);
  for (const auto& r : result.runs) {
    if (r.key.reference()) continue;
    EXPECT_DOUBLE_EQ(r.summary.tokens_per_second, runs::compute_tokens_per_second(r.steps));
    const RunSummary s = summarize(r.method.name, r.steps);
    EXPECT_DOUBLE_EQ(r.summary.tau, s.tau);
    EXPECT_EQ(runs::compute_statistics(r.steps).acceptance_by_depth, s.acceptance_by_depth);
  }
}

// Interleaved turns: a lane keeps its turn for whole steps until Job::turn_ms has passed. With turns of one step
// the lanes alternate step by step; with turns longer than a whole run each run's steps come in one block. In both,
// the steps of different lanes never overlap.
struct StepOrder : runs::JobObserver {
  std::mutex mu;
  std::vector<int> slots;  // the run of each step, in order (reference: -1)
  bool step(const runs::RunKey& k, const StepRecord&, const std::string&) override {
    std::lock_guard lk(mu);
    slots.push_back(k.lane);
    return true;
  }
};

int lane_switches(const std::vector<int>& slots) {
  int n = 0;
  for (size_t i = 1; i < slots.size(); ++i) n += slots[i] != slots[i - 1];
  return n;
}

TEST(JobRunner, InterleavedLanesTakeTurnsOfTheJobsLength) {
  runs::ModelCache cache;
  runs::JobRunner runner(cache);
  auto job = job_with({"pld", "lookahead"}, runs::Schedule::Interleaved);
  job.prompts.resize(1);
  job.options.stop_at_eos = false;
  job.turn_ms = 0;
  StepOrder one_step;
  runner.run(job, one_step);
  // Three runs (reference, pld, lookahead) of 16 tokens: one step a turn switches after nearly every step.
  EXPECT_GE(lane_switches(one_step.slots), 2 * 3) << "turns of one step did not alternate";
  job.turn_ms = 60'000;
  StepOrder whole_runs;
  runner.run(job, whole_runs);
  EXPECT_EQ(lane_switches(whole_runs.slots), 2) << "turns longer than a run were cut short";
}

// Disagreement 1: the app recorded backend "cpu" whatever ran, and the device in another form than the CLI.
// The runner records both, from the backend it resolved, for every caller.
TEST(JobRunner, RecordsEachLanesTargetAndTheResolvedBackendAndDevice) {
  auto dir = test::fresh_dir("runs-record");
  runs::ModelCache cache;
  runs::JobRunner runner(cache);
  Recorded obs;
  auto job = job_with({"sps:gamma=2", "vanilla:model=" + kDraft}, runs::Schedule::Sequential);
  job.record = runs::RecordTo{(dir / "s.db").string(), "compare", "race", 0, nullptr};
  auto result = runner.run(job, obs);
  ASSERT_TRUE(result.recording_error.empty()) << result.recording_error;
  ASSERT_EQ(result.targets.size(), 2u);
  sessions::SessionReader reader((dir / "s.db").string());
  auto s = reader.session(result.session_id);
  EXPECT_EQ(s.meta.backend, backend_name(resolve_backend(Backend::Auto)));
  EXPECT_EQ(s.meta.device, backend_description(resolve_backend(Backend::Auto)));
  EXPECT_EQ(s.meta.backend, result.backend);
  EXPECT_EQ(s.meta.device, result.device);
  ASSERT_EQ(s.runs.size(), result.runs.size());
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const auto& row = s.runs[i];
    const auto& run = result.runs[i];
    ASSERT_TRUE(row.meta.lane.has_value());
    EXPECT_EQ(*row.meta.lane, run.key.lane);
    EXPECT_EQ(row.meta.label, run.label);
    EXPECT_EQ(row.meta.target.path, result.targets[size_t(run.key.target)].identity.path);
    EXPECT_EQ(row.meta.target.config_sha256, result.targets[size_t(run.key.target)].identity.config_sha256);
    EXPECT_EQ(row.outcome->identical_to_reference, run.identical);
  }
}

TEST(JobRunner, ALaneThatCannotBeBuiltIsNamed) {
  runs::ModelCache cache;
  runs::JobRunner runner(cache);
  Recorded obs;
  runs::Job job = job_with({"pld"}, runs::Schedule::Sequential);
  job.lanes.push_back({"streaming", MethodSpec{"streaming", "", "", {}}, kTarget});
  const std::string err = input_error([&] { runner.run(job, obs); });
  EXPECT_NE(err.find("lane 2 (streaming)"), std::string::npos) << err;
  EXPECT_NE(err.find("streaming_config.json"), std::string::npos) << err;
}

TEST(ModelCache, LoadsEachTargetOnce) {
  runs::ModelCache cache;
  auto a = cache.get(kTarget);
  auto b = cache.get(kTarget + "/../llama_bytelevel_f32");
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(cache.size(), 1u);
  cache.keep_only({kDraft});
  EXPECT_EQ(cache.size(), 0u);
}

// Medusa's sparse tree from the heads' accuracies (runs/medusa_tree.h): the n paths of highest product of
// per-depth accuracies, every parent before its children, and the expected accepted drafts their sum.
TEST(MedusaTree, TheBestPathsByProductOfAccuraciesParentsFirst) {
  const std::vector<std::vector<double>> acc = {{0.6, 0.2, 0.1}, {0.5, 0.3, 0.0}, {0.4, 0.1, 0.0}};
  const auto tree = runs::medusa_sparse_tree(acc, 5);
  // Products: [0] .6, [0,0] .3, [1] .2, [0,1] .18, [0,0,0] .12, [2] .1, [1,0] .1, ...
  const std::vector<std::vector<int>> want = {{0}, {0, 0}, {1}, {0, 1}, {0, 0, 0}};
  EXPECT_EQ(tree, want);
  for (size_t i = 0; i < tree.size(); ++i) {  // prefix-closed, parents first
    if (tree[i].size() == 1) continue;
    const std::vector<int> parent(tree[i].begin(), tree[i].end() - 1);
    EXPECT_NE(std::find(tree.begin(), tree.begin() + long(i), parent), tree.begin() + long(i)) << i;
  }
  EXPECT_NEAR(runs::medusa_expected_accepts(acc, tree), 0.6 + 0.3 + 0.2 + 0.18 + 0.12, 1e-12);
  // A rank never seen right is never offered: with n larger than the useful paths the tree stops early.
  EXPECT_LT(runs::medusa_sparse_tree({{0.5, 0.0}}, 4).size(), 4u);
}

}  // namespace
}  // namespace specscope
