// specscope-cli bench's --beside: the target's steps taking turns with a drafter, reported beside the same steps
// alone; the step profile; the step curve's ratios; and its bad input.
#include <gtest/gtest.h>

#include "tests/test_support.h"

namespace specscope {
namespace {

const std::string kTarget = test::fixture("models/llama_bytelevel_f32");
const std::string kDraft = test::fixture("models/llama_bytelevel_bf16");

TEST(BenchCli, BesideADrafterReportsEachStepInTurnsAndAlone) {
  const auto r = test::run_cli("bench --model '" + kTarget + "' --beside '" + kDraft +
                               "' --beside-forwards 2 --repeat 1 --prompt-tokens 16 --gen-tokens 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = test::json_in_output(r.out);
  ASSERT_TRUE(j.contains("beside")) << r.out;
  const auto& b = j["beside"];
  EXPECT_EQ(b["model"], kDraft);
  EXPECT_EQ(b["other_forwards_per_step"], 2);
  EXPECT_GT(b["other_alone_ms"].get<double>(), 0);
  ASSERT_EQ(b["steps"].size(), 4u);
  int expected = 1;
  for (const auto& s : b["steps"]) {
    EXPECT_EQ(s["tokens"], expected);
    expected *= 2;
    EXPECT_GT(s["in_turns_ms"].get<double>(), 0);
    EXPECT_GT(s["alone_ms"].get<double>(), 0);
    EXPECT_GT(s["other_in_turns_ms"].get<double>(), 0);
  }
}

// The step profile: per step size, each operation's time, the thread team's forks and join waits, and the step's
// bound as a multiple of the one-token step.
TEST(BenchCli, TheStepProfileReportsOperationsForksAndJoinWaits) {
  const auto r = test::run_cli("bench --model '" + kTarget + "' --repeat 1 --prompt-tokens 16 --gen-tokens 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = test::json_in_output(r.out);
  ASSERT_TRUE(j.contains("step_profile")) << r.out;
  ASSERT_FALSE(j["step_profile"].empty());
  for (const auto& p : j["step_profile"]) {
    EXPECT_GT(p["ms"].get<double>(), 0);
    EXPECT_GE(p["forks"].get<double>(), 0);
    EXPECT_GE(p["join_wait_ms"].get<double>(), 0);
    EXPECT_LE(p["join_wait_ms"].get<double>(), p["ms"].get<double>());  // inside the forward's own time
    bool linear = false;
    for (const auto& o : p["ops"]) linear = linear || o["op"] == "linear";
    EXPECT_TRUE(linear) << p;
    // The step's floor against the one-token step of the same run (the default step sizes start at 1).
    ASSERT_EQ(j["step_cost"][0]["tokens"], 1);
    EXPECT_GT(p["bound_ms"].get<double>(), 0);
    EXPECT_DOUBLE_EQ(p["bound_vs_one_token_step"].get<double>(),
                     p["bound_ms"].get<double>() / j["step_cost"][0]["ms"].get<double>());
  }
  // Without a one-token step there is no floor to state.
  const auto r2 = test::run_cli("bench --model '" + kTarget +
                                "' --repeat 1 --prompt-tokens 16 --gen-tokens 4 --step-sizes 2,4 --profile-sizes 4"
                                " --json");
  ASSERT_EQ(r2.exit_code, 0) << r2.out;
  EXPECT_EQ(test::json_in_output(r2.out)["step_profile"][0]["bound_vs_one_token_step"].get<double>(), 0.0);
}

// Block-quantized weights run on the integer kernels: the roofline measures that path's peak on every x86-64 CPU
// with AVX2 (AVX-512 VNNI's, else AVX2's vpmaddubsw chain), so the matrix products have a bound and the step's floor
// counts them (without it, an AVX2-only host printed a Q4_K_M 8-token step's floor as 0.02x its one-token step).
TEST(BenchCli, QuantizedMatrixProductsHaveABoundOnTheIntegerPath) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2: the integer kernels' peak is not measured";
  const auto r = test::run_cli("bench --model '" + test::fixture("gguf_models/llama_bytelevel_f32.q8_0.gguf") +
                               "' --repeat 1 --prompt-tokens 16 --gen-tokens 4 --step-sizes 1,4 --profile-sizes 4"
                               " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = test::json_in_output(r.out);
  bool int8_peak = false;
  for (const auto& p : j["roofline"]["peaks"]) int8_peak = int8_peak || p["path"].get<std::string>().rfind("int8 dot", 0) == 0;
  EXPECT_TRUE(int8_peak) << j["roofline"];
  for (const auto& o : j["step_profile"][0]["ops"])
    if (o["op"] == "linear" || o["op"] == "lm_head") EXPECT_GT(o["bound_ms"].get<double>(), 0) << o;
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

// The step curve's ratio within each run: the first size is its own unit in every run, and every size's median
// lies within its range of runs.
TEST(BenchCli, TheStepCurveReportsEachSizesRatioWithinARun) {
  const auto r = test::run_cli("bench --model '" + kTarget +
                               "' --repeat 3 --prompt-tokens 16 --gen-tokens 4 --step-sizes 1,4 --profile-sizes 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = test::json_in_output(r.out);
  ASSERT_EQ(j["step_cost"].size(), 2u) << r.out;
  const auto& one = j["step_cost"][0];
  EXPECT_EQ(one["paired_ratio"].get<double>(), 1.0);
  EXPECT_EQ(one["paired_ratio_range"][0].get<double>(), 1.0);
  EXPECT_EQ(one["paired_ratio_range"][1].get<double>(), 1.0);
  const auto& four = j["step_cost"][1];
  EXPECT_EQ(four["tokens"], 4);
  const double ratio = four["paired_ratio"].get<double>();
  EXPECT_GT(ratio, 0);
  EXPECT_LE(four["paired_ratio_range"][0].get<double>(), ratio);
  EXPECT_GE(four["paired_ratio_range"][1].get<double>(), ratio);
}

TEST(BenchCli, BadBesideInputIsAOneLineError) {
  auto r = test::run_cli("bench --model '" + kTarget + "' --beside /nonexistent/drafter --repeat 1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("/nonexistent/drafter"), std::string::npos) << r.out;
  r = test::run_cli("bench --model '" + kTarget + "' --beside '" + kDraft + "' --beside-forwards 0");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--beside-forwards"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace specscope
