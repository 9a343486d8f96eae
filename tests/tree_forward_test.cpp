// The forward primitive's tree property: a random tree of n tokens forwarded in one call with its ancestor
// mask gives the same logits as forwarding each root-to-node path on its own, and keeping one path then
// decoding on equals decoding that path from scratch.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/model/model.h"
#include "engine/util/error.h"
#include "tests/test_support.h"

using namespace specscope;

namespace {

struct Tree {
  std::vector<int> parent;  // -1: child of the last committed token
  std::vector<int32_t> tokens;
  std::vector<int> depth;
  std::vector<int> path_to(int node) const {
    std::vector<int> p;
    for (int x = node; x >= 0; x = parent[x]) p.insert(p.begin(), x);
    return p;
  }
};

Tree random_tree(int n, int vocab, std::mt19937& rng) {
  Tree t;
  for (int i = 0; i < n; ++i) {
    int par = i == 0 ? -1 : int(rng() % (i + 1)) - 1;  // any earlier node or the root
    t.parent.push_back(par);
    t.depth.push_back(par < 0 ? 0 : t.depth[par] + 1);
    t.tokens.push_back(int32_t(rng() % vocab));
  }
  return t;
}

float max_rel_diff(const float* a, const float* b, int n) {
  float scale = 1.f, d = 0.f;
  for (int i = 0; i < n; ++i) scale = std::max(scale, std::fabs(b[i]));
  for (int i = 0; i < n; ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d / scale;
}

class TreeForward : public ::testing::TestWithParam<std::string> {};

TEST_P(TreeForward, TreeBatchEqualsEachPathAloneAndKeepEqualsScratch) {
  auto model = Model::load(test::fixture("models/" + GetParam()));
  const int V = model->config().vocab_size;
  std::mt19937 rng(1234);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 9; ++i) prompt.push_back(int32_t(rng() % V));

  for (int trial = 0; trial < 4; ++trial) {
    const int n = 5 + trial * 4;
    Tree tree = random_tree(n, V, rng);
    auto ctx = model->new_cpu_context(128);
    ForwardOutput out;
    ctx->forward(Batch::causal(prompt), out);
    const int base = ctx->n_past();

    Batch b;
    b.tokens = tree.tokens;
    b.mask.assign(size_t(n) * n, 0);
    for (int i = 0; i < n; ++i) {
      b.positions.push_back(base + tree.depth[i]);
      for (int a : tree.path_to(i)) b.mask[size_t(i) * n + a] = 1;
    }
    ForwardOutput tree_out;
    ctx->forward(b, tree_out);

    for (int node = 0; node < n; ++node) {
      auto path = tree.path_to(node);
      auto ref = model->new_cpu_context(128);
      std::vector<int32_t> seq = prompt;
      for (int p : path) seq.push_back(tree.tokens[p]);
      ForwardOutput ref_out;
      Batch rb = Batch::causal(seq);
      rb.logit_rows = {int(seq.size()) - 1};
      ref->forward(rb, ref_out);
      EXPECT_LT(max_rel_diff(tree_out.row_logits(node), ref_out.row_logits(0), V), 1e-5)
          << "node " << node << " depth " << tree.depth[node];
    }

    // Keep the deepest node's path, decode two more tokens, compare with decoding from scratch.
    int deepest = 0;
    for (int i = 0; i < n; ++i)
      if (tree.depth[i] > tree.depth[deepest]) deepest = i;
    auto path = tree.path_to(deepest);
    ctx->keep(path);
    ASSERT_EQ(ctx->n_past(), base + int(path.size()));
    std::vector<int32_t> more = {int32_t(rng() % V), int32_t(rng() % V)};
    ForwardOutput kept_out;
    ctx->forward(Batch::causal(more), kept_out);

    auto scratch = model->new_cpu_context(128);
    std::vector<int32_t> seq = prompt;
    for (int p : path) seq.push_back(tree.tokens[p]);
    seq.insert(seq.end(), more.begin(), more.end());
    ForwardOutput scratch_out;
    Batch sb = Batch::causal(seq);
    sb.logit_rows = {int(seq.size()) - 2, int(seq.size()) - 1};
    scratch->forward(sb, scratch_out);
    for (int r = 0; r < 2; ++r)
      EXPECT_LT(max_rel_diff(kept_out.row_logits(r), scratch_out.row_logits(r), V), 1e-5) << "after keep, row " << r;
  }
}

TEST_P(TreeForward, HiddenTapsHaveTheRequestedRows) {
  auto model = Model::load(test::fixture("models/" + GetParam()));
  auto ctx = model->new_cpu_context(64);
  Batch b = Batch::causal(std::vector<int32_t>{5, 6, 7, 8});
  b.taps = {HiddenTap::final_norm(), HiddenTap::layer_input(0), HiddenTap::layer_input(1)};
  b.logit_rows = {3};
  ForwardOutput out;
  ctx->forward(b, out);
  ASSERT_EQ(out.hiddens.size(), 3u);
  for (auto& h : out.hiddens) EXPECT_EQ(h.size(), size_t(4 * model->config().hidden_size));
  EXPECT_EQ(out.logits.size(), size_t(model->config().vocab_size));
  // The residual stream entering layer 0 is the embedding itself (Gemma's times sqrt(hidden_size)).
  std::vector<float> emb = model->weights().embed.to_f32();
  const int H = model->config().hidden_size;
  const float scale = model->config().embed_scale;
  for (int i = 0; i < H; ++i) EXPECT_FLOAT_EQ(out.hiddens[1][size_t(2) * H + i], emb[size_t(7) * H + i] * scale);
}

// A tap of a layer the model does not have is refused before anything runs (checked_positions, which the CUDA
// context calls too: there it would have copied back uninitialised device memory), and the cache is as it was.
TEST_P(TreeForward, ATapOfALayerTheModelLacksIsAnInputError) {
  auto model = Model::load(test::fixture("models/" + GetParam()));
  auto ctx = model->new_cpu_context(64);
  ForwardOutput out;
  ctx->forward(Batch::causal(std::vector<int32_t>{5, 6}), out);
  for (int layer : {-1, model->config().num_layers, 1000}) {
    Batch b = Batch::causal(std::vector<int32_t>{7});
    b.positions = {2};
    b.taps = {HiddenTap::final_norm(), HiddenTap::layer_input(layer)};
    try {
      ctx->forward(b, out);
      ADD_FAILURE() << "a tap of layer " << layer << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("tap of layer " + std::to_string(layer)), std::string::npos) << e.what();
    }
    EXPECT_EQ(ctx->n_past(), 2);
  }
  Batch last = Batch::causal(std::vector<int32_t>{7});
  last.positions = {2};
  last.taps = {HiddenTap::layer_input(model->config().num_layers - 1)};
  ctx->forward(last, out);
  ASSERT_EQ(out.hiddens.size(), 1u);
  EXPECT_EQ(out.hiddens[0].size(), size_t(model->config().hidden_size));
}

TEST_P(TreeForward, ContextOverflowIsAnInputError) {
  auto model = Model::load(test::fixture("models/" + GetParam()));
  auto ctx = model->new_cpu_context(8);
  ForwardOutput out;
  EXPECT_THROW(ctx->forward(Batch::causal(std::vector<int32_t>(9, 3)), out), InputError);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TreeForward,
                         ::testing::Values("llama_bytelevel_f32", "qwen2_f32", "llama_spm_tied_f32", "mistral_f32",
                                           "llama_bytelevel_bf16", "qwen3_f32", "gemma3_f32"));

}  // namespace
