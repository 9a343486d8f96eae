// Losslessness of every method on real (tiny, random) models: greedy output equals vanilla greedy token for
// token on >= 20 prompts, with drafters that agree often (a draft model equal to the target) and rarely
// (a different model), and the StepRecord invariants hold. At T > 0: method_sampling_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

#include "engine/generate/generator.h"
#include "engine/methods/factory.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/model.h"
#include "engine/sampling/logit_summary.h"
#include "engine/util/error.h"
#include "tests/device_like_contexts.h"
#include "tests/test_support.h"

using namespace specscope;
using test::expect_same_run_through;
using test::OnDemandRowsContext;
using test::speculate_beside_vanilla;
using test::SummarizingContext;

namespace {

const std::string kTarget = "models/llama_bytelevel_f32";
const std::string kOtherDraft = "models/llama_bytelevel_bf16";  // same tokenizer, different weights

// The fixture's three golden prompts (the fitted heads were trained on their continuations, so long paths get
// accepted), then random ones.
std::vector<std::vector<int32_t>> prompts(const Model& m, int count, const std::string& fixture = kTarget) {
  std::mt19937 rng(77);
  std::vector<std::vector<int32_t>> out;
  {
    std::ifstream f(test::fixture(fixture + "/golden.json"));
    auto g = nlohmann::json::parse(f);
    for (auto& p : g["prompts"])
      if (int(out.size()) < count) out.push_back(p["ids"].get<std::vector<int32_t>>());
  }
  count -= int(out.size());
  const int V = m.config().vocab_size;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> p;
    const int len = 3 + int(rng() % 12);
    // Repetitive prompts give prompt-lookup something to find.
    for (int j = 0; j < len; ++j) p.push_back(int32_t(rng() % 40 + (i % 3 == 0 ? 100 : rng() % (V - 300))));
    if (i % 2 == 0) p.insert(p.end(), p.begin(), p.end());
    out.push_back(p);
  }
  return out;
}

void check_invariants(const SpeculativeResult& r) {
  int committed = 0;
  for (const auto& s : r.steps) {
    committed += int(s.committed.size());
    // The accepted path is a root path: each node's parent is the previous node (or the root).
    int prev = -1;
    for (int n : s.accepted_path) {
      ASSERT_EQ(s.nodes[n].parent, prev);
      ASSERT_EQ(s.nodes[n].decision, NodeDecision::Accepted);
      prev = n;
    }
    // Committed = accepted tokens then the bonus (possibly cut short at the end of the run).
    for (size_t i = 0; i < s.committed.size(); ++i) {
      if (i < s.accepted_path.size()) ASSERT_EQ(s.committed[i], s.nodes[s.accepted_path[i]].token);
      else ASSERT_EQ(s.committed[i], s.bonus_token);
    }
    ASSERT_LE(s.committed.size(), s.accepted_path.size() + 1);
    ASSERT_EQ(s.target_forwards, 1);
  }
  EXPECT_EQ(committed, int(r.gen.tokens.size()));
  EXPECT_EQ(r.summary.new_tokens, committed);
  EXPECT_EQ(r.summary.target_forwards, int(r.steps.size()));
}

// A method spec with a draft model (fixture-relative path, or none) and options.

MethodSpec spec(std::string name, std::string draft, std::map<std::string, std::string> o) {
  MethodSpec s;
  s.name = std::move(name);
  if (!draft.empty()) s.draft_path = test::fixture(draft);
  s.options = std::move(o);
  return s;
}

// A method spec with a head directory (fixture-relative) and options.
MethodSpec head(std::string name, std::string dir, std::map<std::string, std::string> o) {
  MethodSpec s;
  s.name = std::move(name);
  s.head_path = test::fixture(dir);
  s.options = std::move(o);
  return s;
}

struct MethodCase {
  std::string label;
  MethodSpec spec;
};

std::vector<MethodCase> method_cases() {
  return {
      {"pld", spec("pld", "", {})},
      {"lookahead", spec("lookahead", "", {})},
      {"lookahead_small", spec("lookahead", "", {{"window", "5"}, {"ngram", "3"}, {"guesses", "5"}})},
      {"sps_self_chain", spec("sps", kTarget, {{"gamma", "4"}})},
      {"sps_self_tree", spec("sps", kTarget, {{"gamma", "3"}, {"branching", "3,2,1"}})},
      {"sps_other_chain", spec("sps", kOtherDraft, {{"gamma", "5"}})},
      {"sps_other_tree", spec("sps", kOtherDraft, {{"gamma", "4"}, {"branching", "2,2"}})},
      {"sps_other_confident", spec("sps", kOtherDraft, {{"gamma", "8"}, {"confidence-threshold", "0.6"}})},
      {"sps_other_tree_confident",
       spec("sps", kOtherDraft, {{"gamma", "3"}, {"branching", "3,2"}, {"confidence-threshold", "0.3"}})},
      // The drafter on int8 per-row or int4 per-group copies of its weights (ignored where the CPU lacks the
      // kernels): drafts change, the output must not; a self-drafter stays close enough to keep long paths accepted.
      {"sps_self_int8", spec("sps", kTarget, {{"gamma", "4"}, {"draft-weights", "int8"}})},
      {"sps_other_int8", spec("sps", kOtherDraft, {{"gamma", "3"}, {"branching", "2,1"}, {"draft-weights", "int8"}})},
      {"sps_self_int4", spec("sps", kTarget, {{"gamma", "4"}, {"draft-weights", "int4"}})},
      {"sps_other_int4",
       spec("sps", kOtherDraft, {{"gamma", "8"}, {"confidence-threshold", "0.4"}, {"draft-weights", "int4"}})},
      {"eagle1_random", head("eagle1", "heads/eagle1_bin", {})},
      {"eagle1_fitted", head("eagle1", "heads/eagle1_fitted", {})},
      {"eagle2_fitted", head("eagle2", "heads/eagle1_fitted", {})},
      {"eagle2_small", head("eagle2", "heads/eagle1_fitted", {{"total-tokens", "10"}, {"depth", "3"}, {"draft-top-k", "4"}})},
      {"eagle2_fitted_int8", head("eagle2", "heads/eagle1_fitted", {{"head-weights", "int8"}})},
      {"eagle3_random_int8", head("eagle3", "heads/eagle3", {{"head-weights", "int8"}})},
      {"eagle2_fitted_int4", head("eagle2", "heads/eagle1_fitted", {{"head-weights", "int4"}})},
      {"eagle3_random_int4", head("eagle3", "heads/eagle3", {{"head-weights", "int4"}})},
      {"medusa_fitted_int4", head("medusa", "heads/medusa_fitted", {{"head-weights", "int4"}})},
      {"eagle3_random", head("eagle3", "heads/eagle3", {})},
      {"medusa_random", head("medusa", "heads/medusa_st", {})},
      {"medusa_fitted", head("medusa", "heads/medusa_fitted", {})},
  };
}

}  // namespace

TEST(Methods, GreedyVerificationFromSummariesRecordsWhatItRecordsFromLogits) {
  // What a device backend returns instead of logits at T = 0 (kernels/sampling.cu): every method must produce the
  // same tokens and the same verification record from it, probing every drafted token.
  auto model = Model::load(test::fixture(kTarget));
  auto ps = prompts(*model, 6);
  GenerateOptions opts;
  opts.max_tokens = 24;
  opts.stop_at_eos = false;
  for (auto& mc : method_cases()) {
    auto method = make_method(mc.spec, *model);
    for (size_t i = 0; i < ps.size(); ++i) {
      SummarizingContext summarizing(model->new_cpu_context(256));
      SpeculativeResult got;
      ASSERT_NO_FATAL_FAILURE(expect_same_run_through(summarizing, *model, *method, ps[i], opts, 256,
                                                      mc.label + " prompt " + std::to_string(i), &got));
      // Every decoding step (the prefill's one row of logits comes back whole).
      EXPECT_EQ(summarizing.summarized_forwards, int(got.steps.size()) - 1) << mc.label << ": every step summarized";
    }
  }
  // Vanilla's greedy decoding reads the argmax from the summary too, one per token after the prompt.
  for (size_t i = 0; i < ps.size(); ++i) {
    auto ctx = model->new_cpu_context(256);
    const auto want = generate(*model, *ctx, ps[i], opts);
    SummarizingContext summarizing(model->new_cpu_context(256));
    const auto got = generate(*model, summarizing, ps[i], opts);
    EXPECT_EQ(got.tokens, want.tokens) << "vanilla, prompt " << i;
    EXPECT_EQ(summarizing.summarized_forwards, int(got.tokens.size()) - 1) << "vanilla, prompt " << i;
  }
  // Sampling needs the whole distribution: no summaries are asked for at T > 0.
  opts.sampling.temperature = 0.8f;
  opts.sampling.seed = 5;
  auto method = make_method(spec("sps", kOtherDraft, {{"gamma", "3"}}), *model);
  SummarizingContext summarizing(model->new_cpu_context(256));
  generate_speculative(*model, summarizing, *method, ps[0], opts);
  EXPECT_EQ(summarizing.summarized_forwards, 0);
}

TEST(Methods, SampledVerificationReadsOnlyTheRowsItVisits) {
  // At T > 0 the CUDA backend leaves the verification forward's logits on the device and sends a row when it is
  // first read (Batch::rows_on_demand): every method must sample the same tokens and record the same verification,
  // and a tree's rows must mostly stay where they are.
  auto model = Model::load(test::fixture(kTarget));
  auto ps = prompts(*model, 4);
  GenerateOptions opts;
  opts.max_tokens = 24;
  opts.stop_at_eos = false;
  opts.sampling.temperature = 0.8f;
  opts.sampling.top_p = 0.95f;
  // process_cap 0: whole rows only. 4: a backend that also processes rows where they are (CUDA's processed_rows.cu)
  // sends only the kept tokens, and copies a row whole only where it declines (here: more than 4 tokens kept).
  long tree_offered = 0, tree_copied = 0, sent = 0, declined = 0;
  for (int cap : {0, 4})
    for (auto& mc : method_cases()) {
      auto method = make_method(mc.spec, *model);
      for (size_t i = 0; i < ps.size(); ++i) {
        opts.sampling.seed = 11 + i;
        OnDemandRowsContext lazy(model->new_cpu_context(256));
        lazy.process_cap = cap;
        const std::string what = mc.label + " prompt " + std::to_string(i) + " process cap " + std::to_string(cap);
        SpeculativeResult got;
        ASSERT_NO_FATAL_FAILURE(expect_same_run_through(lazy, *model, *method, ps[i], opts, 256, what, &got));
        EXPECT_EQ(lazy.on_demand_forwards, int(got.steps.size()) - 1) << what << ": every step on demand";
        EXPECT_LE(lazy.rows_copied, lazy.rows_offered) << what;
        if (cap == 0 && (mc.label == "eagle2_fitted" || mc.label == "sps_other_tree")) {
          tree_offered += lazy.rows_offered;
          tree_copied += lazy.rows_copied;
        }
        sent += lazy.distributions_sent;
        declined += lazy.distributions_declined;
        // Lookahead also reads its Jacobi window's rows (their argmax) for itself.
        if (cap > 0 && mc.spec.name != "lookahead")
          EXPECT_EQ(lazy.rows_copied, lazy.distributions_declined)
              << what << ": a row crosses whole exactly when its distribution was declined";
      }
    }
  // Sampled verification walks one path: the rows of its nodes and their parents, not the whole tree's (192 of
  // 4,200 rows here when written).
  ASSERT_GT(tree_offered, 0);
  EXPECT_LT(tree_copied * 5, tree_offered) << tree_copied << " of " << tree_offered << " rows crossed";
  EXPECT_GT(sent, 0);
  EXPECT_GT(declined, 0) << "the test should see rows declined too";
  // Greedy decoding asks for summaries instead, never for rows on demand.
  opts.sampling = SamplingParams{};
  auto method = make_method(spec("sps", kOtherDraft, {{"gamma", "3"}}), *model);
  OnDemandRowsContext lazy(model->new_cpu_context(256));
  generate_speculative(*model, lazy, *method, ps[0], opts);
  EXPECT_EQ(lazy.on_demand_forwards, 0);
}

TEST(Methods, ProbesThatDoNotSpanTheLogitRowsAreRefused) {
  auto model = Model::load(test::fixture(kTarget));
  auto ctx = model->new_cpu_context(64);
  ForwardOutput out;
  Batch b = Batch::causal(std::vector<int32_t>{1, 2, 3});
  b.summaries_only = true;
  b.probe_start = {0, 1, 2};  // three rows need four offsets
  b.probe_tokens = {5, 6};
  EXPECT_THROW(ctx->forward(b, out), InputError);
  b.probe_start = {0, 1, 1, 3};
  b.probe_tokens = {5, 6, model->config().vocab_size};  // not a token
  EXPECT_THROW(ctx->forward(b, out), InputError);
  b.probe_tokens = {5, 6, 7};
  EXPECT_NO_THROW(ctx->forward(b, out));
}

TEST(Methods, GreedyOutputEqualsVanillaForEveryMethod) {
  auto model = Model::load(test::fixture(kTarget));
  auto ps = prompts(*model, 20);
  GenerateOptions opts;
  opts.max_tokens = 40;
  opts.stop_at_eos = false;
  for (auto& mc : method_cases()) {
    auto method = make_method(mc.spec, *model);
    long accepted = 0;
    for (size_t i = 0; i < ps.size(); ++i) {
      auto vctx = model->new_cpu_context(256);
      auto ref = generate(*model, *vctx, ps[i], opts);
      auto ctx = model->new_cpu_context(256);
      auto res = generate_speculative(*model, *ctx, *method, ps[i], opts);
      ASSERT_EQ(res.gen.tokens, ref.tokens) << mc.label << " prompt " << i;
      check_invariants(res);
      for (auto& s : res.steps) accepted += s.accepted_count();
    }
    // A drafter equal to the target must get long paths accepted; otherwise the test proves little. (On int4 the
    // self-drafter of this random 64-wide model drifts from the target more: 398 accepted where int8 keeps > 400.)
    const bool int4 = mc.label.size() > 5 && mc.label.compare(mc.label.size() - 5, 5, "_int4") == 0;
    if (mc.label.rfind("sps_self", 0) == 0) EXPECT_GT(accepted, (int4 ? 15 : 20) * 20) << mc.label;
    if (mc.label.find("fitted") != std::string::npos) EXPECT_GT(accepted, 60) << mc.label;
  }
}

// The other architectures' forwards run in every forward a method makes: the drafter's, the verification tree's
// (tree attention over rows normalized one by one, and Gemma 3's sliding layers masking a tree's keys by position)
// and Lookahead's Jacobi window. `target` and `other` share a tokenizer; `other` is the bf16 twin.
// `golden`: the fixture whose golden.json holds the prompts (a GGUF target's Hugging Face source); default: the target.
static void expect_methods_lossless_on(const std::string& target, const std::string& other,
                                       const std::string& golden = "") {
  SCOPED_TRACE(target);
  auto model = Model::load(test::fixture(target));
  auto ps = prompts(*model, 8, golden.empty() ? target : golden);
  GenerateOptions opts;
  opts.max_tokens = 40;
  opts.stop_at_eos = false;
  const std::vector<MethodCase> cases = {
      {"pld", spec("pld", "", {})},
      {"lookahead", spec("lookahead", "", {})},
      {"sps_self_chain", spec("sps", target, {{"gamma", "4"}})},
      {"sps_self_tree", spec("sps", target, {{"gamma", "3"}, {"branching", "3,2,1"}})},
      {"sps_other_tree", spec("sps", other, {{"gamma", "4"}, {"branching", "2,2"}})},
  };
  for (const auto& mc : cases) {
    auto method = make_method(mc.spec, *model);
    long accepted = 0;
    for (size_t i = 0; i < ps.size(); ++i) {
      auto res = speculate_beside_vanilla(*model, *method, ps[i], opts);
      ASSERT_FALSE(::testing::Test::HasFailure()) << mc.label << " prompt " << i;
      check_invariants(res);
      for (auto& s : res.steps) accepted += s.accepted_count();
    }
    if (mc.label.rfind("sps_self", 0) == 0) EXPECT_GT(accepted, 20 * 8) << mc.label;
  }
}

TEST(Methods, GreedyOutputEqualsVanillaOnQwen3) {
  ASSERT_TRUE(Model::load(test::fixture("models/qwen3_f32"))->config().qk_norm);
  expect_methods_lossless_on("models/qwen3_f32", "models/qwen3_bf16");
}

TEST(Methods, GreedyOutputEqualsVanillaOnGemma3) {
  const auto model = Model::load(test::fixture("models/gemma3_f32"));
  const auto& c = model->config();
  ASSERT_TRUE(c.sandwich_norms && c.window_of(0) > 0 && c.window_of(1) == 0);
  expect_methods_lossless_on("models/gemma3_f32", "models/gemma3_bf16");
}

// GPT-OSS: sinks, sliding layers, biased experts; the HF model drafted for by its MXFP4 GGUF file and the other way
// round (the integer MXFP4 kernels on the target side).
TEST(Methods, GreedyOutputEqualsVanillaOnGptOss) {
  const auto model = Model::load(test::fixture("models/gpt_oss_f32"));
  ASSERT_TRUE(model->config().attention_sinks && model->config().moe() && model->config().window_of(0) > 0);
  expect_methods_lossless_on("models/gpt_oss_f32", "gguf_models/gpt_oss_f32.mxfp4.gguf");
  expect_methods_lossless_on("gguf_models/gpt_oss_f32.mxfp4.gguf", "models/gpt_oss_f32", "models/gpt_oss_f32");
}

// DeepSeek's latent attention and routing (deepseek_v3_f32: a low-rank query, sigmoid experts with a choice bias in
// groups): PLD, lookahead (its n-gram branches verified as one tree) and SpS, HF and Q8_0 GGUF drafting for each other.
TEST(Methods, GreedyOutputEqualsVanillaOnDeepSeek) {
  const auto model = Model::load(test::fixture("models/deepseek_v3_f32"));
  ASSERT_TRUE(model->config().mla() && model->config().expert_sigmoid && model->config().expert_groups > 0);
  expect_methods_lossless_on("models/deepseek_v3_f32", "gguf_models/deepseek_v3_f32.q8_0.gguf");
  expect_methods_lossless_on("gguf_models/deepseek_v2_f32.q8_0.gguf", "models/deepseek_v2_f32", "models/deepseek_v2_f32");
}

// OLMo 2 and 3: no norms before the sublayers, q and k normed over whole projections, OLMo 3's sliding layers and
// YaRN; HF and Q8_0 GGUF drafting for each other.
TEST(Methods, GreedyOutputEqualsVanillaOnOlmo) {
  const auto model = Model::load(test::fixture("models/olmo3_f32"));
  ASSERT_TRUE(!model->config().pre_norms && model->config().qk_norm_whole && model->config().window_of(0) > 0);
  expect_methods_lossless_on("models/olmo3_f32", "gguf_models/olmo3_f32.q8_0.gguf");
  expect_methods_lossless_on("gguf_models/olmo2_f32.q8_0.gguf", "models/olmo2_f32", "models/olmo2_f32");
}

TEST(Methods, SelfDraftAcceptsEverythingGreedy) {
  auto model = Model::load(test::fixture(kTarget));
  MethodSpec s;
  s.name = "sps";
  s.draft_path = test::fixture(kTarget);
  s.options = {{"gamma", "4"}};
  auto method = make_method(s, *model);
  auto ctx = model->new_cpu_context(256);
  GenerateOptions opts;
  opts.max_tokens = 41;
  opts.stop_at_eos = false;
  auto res = generate_speculative(*model, *ctx, *method, prompts(*model, 1)[0], opts);
  // 1 token from the prefill, then 5 per step (4 accepted + bonus).
  EXPECT_EQ(res.steps.size(), 9u);
  EXPECT_NEAR(res.summary.tau, 5.0, 1e-9);
  // Chains: n-α is defined, and a drafter equal to the target is accepted at every depth.
  EXPECT_EQ(res.summary.n_alpha, (std::vector<double>{1.0, 1.0, 1.0, 1.0}));
}

// transformers' assistant_confidence_threshold: a chain stops after the first draft the drafter gives less than the
// threshold (that draft included), and otherwise runs gamma deep; the output stays vanilla's.
TEST(Methods, SpsConfidenceThresholdCutsChainsAfterAnUnsureDraft) {
  auto model = Model::load(test::fixture(kTarget));
  const float threshold = 0.97f;
  MethodSpec s;
  s.name = "sps";
  s.draft_path = test::fixture(kOtherDraft);
  s.options = {{"gamma", "6"}, {"confidence-threshold", "0.97"}};
  auto method = make_method(s, *model);
  GenerateOptions opts;
  opts.max_tokens = 48;
  opts.stop_at_eos = false;
  int cut = 0, full = 0;
  for (const auto& p : prompts(*model, 6)) {
    const auto res = speculate_beside_vanilla(*model, *method, p, opts);
    for (const auto& step : res.steps) {
      if (step.step > 0) EXPECT_FLOAT_EQ(step.draft_cut, threshold) << "the why panel reads the cut from each step";
      if (step.nodes.empty()) continue;  // the prefill's step, or one with no room left to draft
      for (size_t i = 0; i + 1 < step.nodes.size(); ++i) EXPECT_GE(step.nodes[i].draft_prob, threshold) << i;
      if (step.nodes.size() < 6) {
        // Cut short, so by its unsure last draft (the context has room for every chain of these runs).
        EXPECT_LT(step.nodes.back().draft_prob, threshold) << "step " << step.step;
        ++cut;
      } else {
        ++full;
      }
    }
  }
  // Both kinds occur on these prompts, or the test proves little.
  EXPECT_GT(cut, 5);
  EXPECT_GT(full, 0);
  s.options["confidence-threshold"] = "1.5";
  EXPECT_THROW(make_method(s, *model), InputError);
}

// A tree whose other branches end below the cut (top-2 at the first depth: the runner-up is mostly unsure) drafts
// the one branch that goes on as a chain does, one row per forward on the cached path, not the whole tree at each
// depth; the output stays vanilla's.
TEST(Methods, SpsTreeWithOneLiveBranchDraftsItAsAChain) {
  auto model = Model::load(test::fixture(kTarget));
  MethodSpec s;
  s.name = "sps";
  s.draft_path = test::fixture(kOtherDraft);
  const float cut = 0.6f;
  s.options = {{"gamma", "6"}, {"branching", "2"}, {"confidence-threshold", "0.6"}};
  auto method = make_method(s, *model);
  GenerateOptions opts;
  opts.max_tokens = 48;
  opts.stop_at_eos = false;
  int long_chains = 0;
  for (const auto& p : prompts(*model, 6)) {
    const auto res = speculate_beside_vanilla(*model, *method, p, opts);
    int prev_accepted = 0;
    for (const auto& step : res.steps) {
      // Drafts extended (drafted from), per depth; the first depth has two children.
      std::map<int, int> extended;
      int first_depth = 0;
      for (const auto& n : step.nodes) {
        first_depth += n.depth == 1;
        if (n.depth < 6 && n.draft_prob >= cut) ++extended[n.depth];
      }
      bool one_branch = true;
      int e = 0;
      for (auto [depth, count] : extended) {
        one_branch = one_branch && count == 1;
        e += count;
      }
      if (!step.nodes.empty() && one_branch) {
        EXPECT_EQ(first_depth, 2) << "top-2 at the first depth";
        // The catch-up runs at most the last step's accepted drafts and the new token; then one row per extension.
        EXPECT_EQ(step.draft_forwards, 1 + e) << "step " << step.step;
        if (step.step > 1)  // (the first drafting step's catch-up runs the whole prompt)
          EXPECT_LE(step.draft_tokens, prev_accepted + 1 + e) << "step " << step.step;
        long_chains += e >= 2;
      }
      prev_accepted = step.accepted_count();
    }
  }
  EXPECT_GT(long_chains, 3) << "too few branches went two deep for the test to say much";
}
