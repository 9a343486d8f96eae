// Draft heads against the official code's outputs (tests/fixtures/heads/*/expected.json, written by
// tests/fixtures/make_head_fixtures.py: EAGLE-1 by the official eagle-llm package, Medusa heads by the
// official medusa-llm package, EAGLE-2/3 dynamic trees by an independent reference of the main branch).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <nlohmann/json.hpp>

#include "engine/cpu/matmul.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/weight_form.h"
#include "engine/heads/eagle_head.h"
#include "engine/heads/medusa_head.h"
#include "engine/methods/eagle_method.h"
#include "engine/methods/medusa_method.h"
#include "engine/model/model.h"
#include "engine/util/error.h"
#include "tests/test_support.h"

using namespace specscope;
using nlohmann::json;

namespace {

// Against the official code, on the exact path (f32 activations, as PyTorch computes): the fast paths round the
// activations (bf16, f16; matmul.h), which can swap two of a head's near-tied top tokens (medusa_st's and
// medusa_pt's head 3 rank two within f16 rounding of each other).
const bool kExactPath = (cpu::set_quant_exact(true), true);

json load_expected(const std::string& head) {
  std::ifstream f(test::fixture("heads/" + head + "/expected.json"));
  return json::parse(f);
}

std::shared_ptr<const Model> target() {
  static auto m = Model::load(test::fixture("models/llama_bytelevel_f32"));
  return m;
}

// A DecodeState and a ForwardOutput holding the expected features as the target's taps.
struct Scene {
  DecodeState st;
  ForwardOutput out;
  Rng rng{1};
};

Scene scene_for(const json& e, int taps) {
  Scene s;
  s.st.target = target().get();
  for (int t : e["prompt_ids"]) s.st.tokens.push_back(t);
  s.st.prompt_tokens = int(s.st.tokens.size());
  s.st.rng = &s.rng;
  const int L = int(e["prompt_ids"].size());
  const int dim = e["feature"]["dim"];
  const int H = dim / taps;
  s.out.hidden = H;
  s.out.vocab = target()->config().vocab_size;
  s.out.hiddens.assign(taps, std::vector<float>(size_t(L) * H));
  for (int i = 0; i < L; ++i)
    for (int t = 0; t < taps; ++t)
      for (int d = 0; d < H; ++d) s.out.hiddens[t][size_t(i) * H + d] = e["feature"]["values"][i][t * H + d];
  return s;
}

// As the decoding loop does: the method sees the prompt's forward, then the first sampled token is appended.
template <class M>
void prefill_then_root(M& m, Scene& s, const json& e) {
  m.prefill(s.st, s.out);
  s.st.tokens.push_back(e["target_next_token"]);
}

void expect_tree(const DraftTree& tree, const json& want, const std::string& what) {
  const auto& toks = want["draft_tokens"];
  const auto& parents = want["parents"];
  ASSERT_EQ(tree.size() + 1, int(toks.size())) << what;
  for (int i = 0; i < tree.size(); ++i) {
    EXPECT_EQ(tree.nodes[i].token, toks[i + 1].get<int>()) << what << " node " << i;
    EXPECT_EQ(tree.nodes[i].parent + 1, parents[i + 1].get<int>()) << what << " node " << i;
    if (want.contains("node_scores"))
      EXPECT_NEAR(tree.nodes[i].cum_score, want["node_scores"][i].get<float>(), 1e-3) << what << " node " << i;
    EXPECT_EQ(tree.nodes[i].depth, want["position_ids"][i + 1].get<int>()) << what << " node " << i;
  }
}

}  // namespace

TEST(EagleHead, HiddenStatesAndTopTokensMatchTheOfficialCode) {
  for (std::string dir : {"eagle1_bin", "eagle1_st", "eagle3"}) {
    json e = load_expected(dir);
    auto head = EagleHead::load(test::fixture("heads/" + dir), *target());
    const int L = int(e["prompt_ids"].size()), H = head->config().hidden_size;
    std::vector<float> feats;
    for (auto& row : e["feature"]["values"])
      for (auto& v : row) feats.push_back(v.get<float>());
    std::vector<int32_t> toks, pos;
    for (auto& t : e["head_input_ids"]) toks.push_back(t);
    for (auto& p : e["head_positions"]) pos.push_back(p);
    HeadCache cache;
    cache.reset(64, head->kv_dim());
    std::vector<float> out(size_t(L) * H);
    head->forward(feats.data(), head->feature_dim(), toks.data(), pos.data(), L, cache, nullptr, out.data());
    float worst = 0;
    for (int i = 0; i < L; ++i)
      for (int d = 0; d < H; ++d)
        worst = std::max(worst, std::fabs(out[size_t(i) * H + d] - e["head_hidden"][i][d].get<float>()));
    EXPECT_LT(worst, 1e-4) << dir;
    std::vector<float> lp(head->draft_vocab());
    head->log_probs(out.data() + size_t(L - 1) * H, 1, lp.data());
    for (int k = 0; k < 10; ++k) {
      const int want = e["last"]["top_ids"][k];
      const int draft_id = e["last"].contains("top_draft_ids") ? e["last"]["top_draft_ids"][k].get<int>() : want;
      EXPECT_EQ(head->to_target(draft_id), want) << dir;
      EXPECT_NEAR(lp[draft_id], e["last"]["top_logprobs"][k].get<float>(), 1e-4) << dir << " rank " << k;
    }
  }
}

TEST(EagleHead, BinAndSafetensorsCopiesAreIdentical) {
  auto a = EagleHead::load(test::fixture("heads/eagle1_bin"), *target());
  auto b = EagleHead::load(test::fixture("heads/eagle1_st"), *target());
  EXPECT_EQ(a->parameter_count(), b->parameter_count());
  EXPECT_EQ(a->kind(), EagleHead::Kind::Eagle1);
  EXPECT_EQ(EagleHead::load(test::fixture("heads/eagle3"), *target())->kind(), EagleHead::Kind::Eagle3);
}

// head-weights=int8/int4 on an EAGLE-1 head: its drafts read a requantized copy of the target's LM head (every draft
// level reads the whole LM head), and the target's own LM head stays as loaded. As loaded, the head reads the
// target's.
TEST(EagleHead, RequantizedEagle1HeadDraftsFromItsOwnCopyOfTheTargetsLmHead) {
  const TensorView& target_head = target()->weights().lm_head;
  const int H = target()->config().hidden_size, V = target()->config().vocab_size, n = 3;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> hidden(size_t(n) * H);
  for (auto& v : hidden) v = nd(rng);
  // log_probs from a given LM head: the linear layer, then each row's log-softmax.
  auto log_probs_with = [&](const TensorView& lm_head) {
    std::vector<float> out(size_t(n) * V);
    cpu::linear(hidden.data(), n, lm_head, nullptr, out.data());
    for (int r = 0; r < n; ++r) cpu::log_softmax(out.data() + size_t(r) * V, V);
    return out;
  };
  const auto as_loaded = log_probs_with(target_head);
  {
    auto head = EagleHead::load(test::fixture("heads/eagle1_st"), *target());
    std::vector<float> got(size_t(n) * V);
    head->log_probs(hidden.data(), n, got.data());
    EXPECT_EQ(got, as_loaded);
  }
  for (auto form : {cpu::WeightForm::Int8, cpu::WeightForm::Int4}) {
    ASSERT_TRUE(cpu::weight_form_supported(form)) << cpu::weight_form_name(form);  // AVX2 and AVX-512 both have them
    auto head = EagleHead::load(test::fixture("heads/eagle1_st"), *target(), form);
    EXPECT_FALSE(target_head.requantized) << "the target's LM head was requantized";
    TensorView copy = target_head;
    cpu::requantize(copy, form);
    const auto want = log_probs_with(copy);
    std::vector<float> got(size_t(n) * V);
    head->log_probs(hidden.data(), n, got.data());
    EXPECT_EQ(got, want) << cpu::weight_form_name(form);
    EXPECT_NE(got, as_loaded) << cpu::weight_form_name(form) << ": the drafts did not read the requantized copy";
    EXPECT_EQ(log_probs_with(target_head), as_loaded) << "the target's LM head changed";
  }
}

TEST(EagleMethod, Eagle1StaticTreeMatchesTheOfficialCandidates) {
  for (std::string dir : {"eagle1_bin", "eagle1_fitted"}) {
    json e = load_expected(dir);
    EagleMethod m("eagle1", EagleHead::load(test::fixture("heads/" + dir), *target()), EagleOptions{false});
    Scene s = scene_for(e, 1);
    prefill_then_root(m, s, e);
    DraftTree tree;
    m.draft(s.st, tree, 1000);
    const auto& want = e["static_tree"]["tree_candidates"];
    ASSERT_EQ(tree.size() + 1, int(want.size())) << dir;
    EXPECT_EQ(want[0].get<int>(), s.st.tokens.back());
    for (int i = 0; i < tree.size(); ++i) EXPECT_EQ(tree.nodes[i].token, want[i + 1].get<int>()) << dir << " node " << i;
    EXPECT_EQ(tree.max_depth(), 5);
  }
}

TEST(EagleMethod, DynamicTreesMatchTheReference) {
  for (std::string dir : {"eagle1_st", "eagle1_fitted", "eagle3"}) {
    json e = load_expected(dir);
    const bool is3 = dir == "eagle3";
    for (auto& [name, want] : e["trees"].items()) {
      EagleOptions o;
      o.total_tokens = want["total_tokens"];
      o.depth = want["depth"];
      o.top_k = want["top_k"];
      EagleMethod m(is3 ? "eagle3" : "eagle2", EagleHead::load(test::fixture("heads/" + dir), *target()), o);
      Scene s = scene_for(e, is3 ? 3 : 1);
      prefill_then_root(m, s, e);
      DraftTree tree;
      m.draft(s.st, tree, 1000);
      expect_tree(tree, want, dir + "/" + name);
    }
  }
}

TEST(MedusaMethod, HeadsAndTreeCandidatesMatchTheOfficialCode) {
  for (std::string dir : {"medusa_st", "medusa_pt", "medusa_fitted"}) {
    json e = load_expected(dir);
    auto heads = MedusaHeads::load(test::fixture("heads/" + dir), *target());
    ASSERT_EQ(heads->num_heads(), 5);
    const int V = target()->config().vocab_size, L = int(e["prompt_ids"].size());
    const int H = target()->config().hidden_size;
    std::vector<float> last(H), logits(V);
    for (int d = 0; d < H; ++d) last[d] = e["feature"]["values"][L - 1][d];
    for (int h = 0; h < 5; ++h) {
      heads->logits(h, last.data(), logits.data());
      std::vector<int> order(V);
      for (int i = 0; i < V; ++i) order[i] = i;
      std::partial_sort(order.begin(), order.begin() + 10, order.end(),
                        [&](int a, int b) { return logits[a] > logits[b]; });
      for (int k = 0; k < 10; ++k) EXPECT_EQ(order[k], e["heads_last"][h]["top_ids"][k].get<int>()) << dir << " head " << h;
    }
    MedusaMethod m(heads, MedusaOptions{});
    Scene s = scene_for(e, 1);
    prefill_then_root(m, s, e);
    DraftTree tree;
    m.draft(s.st, tree, 1000);
    const auto& want = e["tree"]["tree_candidates"];
    ASSERT_EQ(tree.size() + 1, int(want.size())) << dir;
    for (int i = 0; i < tree.size(); ++i) EXPECT_EQ(tree.nodes[i].token, want[i + 1].get<int>()) << dir << " node " << i;
    EXPECT_EQ(tree.max_depth(), 4);
  }
}

TEST(Heads, MismatchedHeadIsAClearError) {
  // An EAGLE-1 head for a 64-wide model on a model of another width.
  auto other = Model::load(test::fixture("models/tinyvocab_target"));
  try {
    EagleHead::load(test::fixture("heads/eagle1_st"), *other);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("eagle1_st"), std::string::npos) << e.what();
  }
  EXPECT_THROW(MedusaHeads::load(test::fixture("heads/medusa_st"), *other), InputError);
  EXPECT_THROW(EagleHead::load(test::fixture("models/tinyvocab_target"), *target()), InputError);
}
