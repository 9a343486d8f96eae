// Verification on synthetic logits: greedy path matching, and that multi-round speculative sampling over a
// tree commits tokens distributed exactly as the target (chi-square over many seeded runs), for sampled
// (SpecInfer) and deterministic (EAGLE-2 top-k) sibling sets, with and without top-p/temperature.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/methods/draft_tree.h"
#include "engine/methods/verify.h"
#include "tests/test_support.h"

using namespace specscope;

namespace {

constexpr int V = 8;

// A ForwardOutput holding the given logits rows (every row requested).
ForwardOutput fake_output(const std::vector<std::vector<float>>& rows) {
  ForwardOutput o;
  o.vocab = V;
  for (size_t r = 0; r < rows.size(); ++r) {
    o.logit_rows.push_back(int(r));
    o.logits.insert(o.logits.end(), rows[r].begin(), rows[r].end());
  }
  return o;
}

const std::vector<float> kRoot = {1.5f, 0.2f, 1.0f, -0.5f, 0.8f, -1.0f, 0.1f, 0.4f};
const std::vector<float> kDraftRoot = {0.3f, 1.2f, 1.0f, 0.6f, -0.2f, 0.0f, 0.9f, -0.8f};  // deliberately off

std::vector<float> row_for(int token) {  // the target's logits after a token: depends on the token
  std::vector<float> r(V);
  for (int i = 0; i < V; ++i) r[i] = std::sin(1.3f * float(token + 1) * float(i + 2)) * 1.5f;
  return r;
}

}  // namespace

TEST(Verify, GreedyFollowsArgmaxAndStopsAtFirstMismatch) {
  // Root argmax is 0; after 0 the argmax of row_for(0) is computed; the tree: 0 -> [best0, other], 2.
  auto r0 = row_for(0);
  int best0 = int(argmax(r0.data(), V));
  DraftTree t;
  int a = t.add(-1, 2, 0.5f, NodeSource::DraftModel);
  int b = t.add(-1, 0, 0.4f, NodeSource::DraftModel);
  int c = t.add(b, (best0 + 1) % V, 0.3f, NodeSource::DraftModel);
  int d = t.add(b, best0, 0.2f, NodeSource::DraftModel);
  std::vector<int> rows;
  Batch batch = tree_batch(t, 5, 10, rows);
  ASSERT_EQ(batch.size(), 5);
  auto out = fake_output({kRoot, row_for(2), row_for(0), row_for((best0 + 1) % V), row_for(best0)});
  SamplingParams greedy;
  Rng rng(1);
  auto res = verify_tree(t, out, rows, greedy, rng);
  ASSERT_EQ(res.accepted_path, (std::vector<int>{b, d}));
  EXPECT_EQ(t.nodes[a].decision, NodeDecision::Rejected);
  EXPECT_EQ(t.nodes[c].decision, NodeDecision::Rejected);
  auto rd = row_for(best0);
  EXPECT_EQ(res.bonus_token, argmax(rd.data(), V));
  EXPECT_EQ(res.bonus_source, BonusSource::Target);
}

TEST(Verify, TreeBatchMaskIsAncestorClosureAndPositionsAreDepths) {
  DraftTree t;
  int a = t.add(-1, 1, 0, NodeSource::DraftModel);
  int b = t.add(-1, 2, 0, NodeSource::DraftModel);
  int c = t.add(a, 3, 0, NodeSource::DraftModel);
  t.add(c, 4, 0, NodeSource::DraftModel);
  std::vector<int> rows;
  Batch bt = tree_batch(t, 9, 100, rows);
  EXPECT_EQ(bt.positions, (std::vector<int32_t>{100, 101, 101, 102, 103}));
  auto m = [&](int i, int j) { return bt.mask[size_t(i) * 5 + j]; };
  EXPECT_TRUE(m(3, 0) && m(3, 1) && m(3, 3) && !m(3, 2));
  EXPECT_TRUE(m(4, 0) && m(4, 1) && m(4, 3) && m(4, 4) && !m(4, 2));
  EXPECT_TRUE(m(2, 0) && m(2, 2) && !m(2, 1));
  (void)b;
}

// Draws the first two committed tokens many times and compares with the target's own joint distribution.
static void check_distribution(bool sampled, int children, const SamplingParams& sp, bool two_levels) {
  const int N = 40000;
  std::map<std::pair<int, int>, long> joint;
  std::vector<long> first(V, 0);
  Rng rng(sp.seed + 99);
  for (int run = 0; run < N; ++run) {
    DraftTree t;
    // Level 1 from the root.
    Distribution q = process_logits(kDraftRoot.data(), V, sp);
    auto& info = t.info_for_parent(-1);
    std::vector<int> lvl1;
    if (sampled) {
      info.sampled = true;
      info.child_dist = q;
      for (int k = 0; k < children; ++k) {
        int32_t x = sample_from(q, rng);
        lvl1.push_back(t.add(-1, x, q.prob_of(x), NodeSource::DraftModel));
      }
    } else {  // deterministic: the drafter's top-k distinct tokens
      for (int k = 0; k < children && k < int(q.size()); ++k) lvl1.push_back(t.add(-1, q.ids[k], q.probs[k], NodeSource::DraftModel));
    }
    if (two_levels)
      for (int n : lvl1) {  // one deterministic child under each: token (x+3)%V
        t.add(n, (t.nodes[n].token + 3) % V, 0.5f, NodeSource::DraftModel);
      }
    std::vector<int> rows;
    Batch b = tree_batch(t, 0, 0, rows);
    std::vector<std::vector<float>> logits(b.size());
    logits[0] = kRoot;
    for (int i = 1; i < b.size(); ++i) logits[i] = row_for(b.tokens[i]);
    auto out = fake_output(logits);
    auto res = verify_tree(t, out, rows, sp, rng);
    std::vector<int> committed;
    for (int n : res.accepted_path) committed.push_back(t.nodes[n].token);
    committed.push_back(res.bonus_token);
    if (committed.size() < 2) {
      // Only one token this step: the second comes from the target at that token (a vanilla draw).
      auto row = row_for(committed[0]);
      committed.push_back(sample_from(process_logits(row.data(), V, sp), rng));
    }
    first[committed[0]]++;
    joint[{committed[0], committed[1]}]++;
  }
  Distribution p0 = process_logits(kRoot.data(), V, sp);
  std::vector<double> p_first(V, 0);
  for (int i = 0; i < V; ++i) p_first[i] = p0.prob_of(i);
  EXPECT_GT(test::chi_square_test(first, p_first), 0.001) << "first-token distribution differs from the target's";
  std::vector<long> obs;
  std::vector<double> exp;
  for (int a = 0; a < V; ++a) {
    auto row = row_for(a);
    Distribution p1 = process_logits(row.data(), V, sp);
    for (int c = 0; c < V; ++c) {
      obs.push_back(joint[{a, c}]);
      exp.push_back(p_first[a] * p1.prob_of(c));
    }
  }
  EXPECT_GT(test::chi_square_test(obs, exp), 0.001) << "joint distribution of two tokens differs from the target's";
}

TEST(Verify, SampledChainPreservesTargetDistributionAtT1) {
  SamplingParams sp;
  sp.temperature = 1.f;
  sp.seed = 1;
  check_distribution(true, 1, sp, true);
}

TEST(Verify, SampledSiblingsPreserveDistributionAtT07TopP09) {
  SamplingParams sp;
  sp.temperature = 0.7f;
  sp.top_p = 0.9f;
  sp.seed = 2;
  check_distribution(true, 3, sp, true);
}

TEST(Verify, DeterministicTopKSiblingsPreserveDistribution) {
  SamplingParams sp;
  sp.temperature = 1.f;
  sp.seed = 3;
  check_distribution(false, 3, sp, true);
  sp.temperature = 0.7f;
  sp.top_p = 0.9f;
  check_distribution(false, 2, sp, false);
}

// The test must be able to fail: a verifier that always accepts the drafter's first child is biased.
TEST(Verify, ChiSquareDetectsABiasedAcceptRule) {
  SamplingParams sp;
  sp.temperature = 1.f;
  Distribution q = process_logits(kDraftRoot.data(), V, sp);
  Rng rng(5);
  std::vector<long> counts(V, 0);
  for (int i = 0; i < 20000; ++i) counts[sample_from(q, rng)]++;  // "accept every draft"
  Distribution p = process_logits(kRoot.data(), V, sp);
  std::vector<double> probs(V);
  for (int i = 0; i < V; ++i) probs[i] = p.prob_of(i);
  EXPECT_LT(test::chi_square_test(counts, probs), 1e-6);
}

TEST(ChoiceTree, PublishedTreesHaveTheirSizesAndDepths) {
  // EAGLE's mc_sim_7b_63 (25 nodes, depth 5) and Medusa's mc_sim_7b_63 (63 nodes, depth 4), from
  // ../shared/reference/tree_choices.json (copied into the fixture).
  ChoiceTree e = build_choice_tree({{0}, {1}, {2}, {3}, {0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {2, 0}, {2, 1}, {3, 0},
                                    {0, 0, 0}, {0, 0, 1}, {0, 0, 2}, {0, 1, 0}, {0, 1, 1}, {0, 2, 0}, {0, 2, 1}, {1, 0, 0},
                                    {0, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 0, 2}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 1}});
  EXPECT_EQ(e.paths.size(), 25u);
  EXPECT_EQ(*std::max_element(e.depth.begin(), e.depth.end()), 5);
  for (size_t i = 0; i < e.paths.size(); ++i)
    if (e.parent[i] >= 0) {
      EXPECT_LT(e.parent[i], int(i));
      EXPECT_EQ(e.depth[e.parent[i]] + 1, e.depth[i]);
    }
  EXPECT_THROW(build_choice_tree({{0, 1}}), std::exception);  // parent missing
}

TEST(Verify, TypicalAcceptanceTakesTheLongestPathAboveTheThreshold) {
  // Root distribution softmax(kRoot) at T=1: token 0 is likeliest (~0.31), token 5 rare (~0.025).
  SamplingParams sp;
  sp.temperature = 1.f;
  DraftTree t;
  int rare = t.add(-1, 5, 0.5f, NodeSource::MedusaHead);
  int likely = t.add(-1, 0, 0.4f, NodeSource::MedusaHead);
  int after_likely = t.add(likely, argmax(row_for(0).data(), V), 0.3f, NodeSource::MedusaHead);
  int under_rare = t.add(rare, 1, 0.3f, NodeSource::MedusaHead);
  std::vector<int> rows;
  Batch b = tree_batch(t, 0, 0, rows);
  std::vector<std::vector<float>> logits(b.size());
  logits[0] = kRoot;
  for (int i = 1; i < b.size(); ++i) logits[i] = row_for(b.tokens[i]);
  auto out = fake_output(logits);
  Rng rng(3);
  TypicalAcceptance ta;  // 0.09 / 0.3
  auto res = verify_tree_typical(t, out, rows, sp, rng, ta);
  // The threshold at the root: min(0.09, 0.3 * exp(-H(p))).
  auto p = softmax_probs(kRoot.data(), V);
  double h = 0;
  for (float x : p) h -= x * std::log(x);
  const float thr = std::min(0.09f, float(0.3 * std::exp(-h)));
  EXPECT_NEAR(t.nodes[rare].accept_prob, thr, 1e-6);
  EXPECT_EQ(t.nodes[rare].decision, p[5] > thr ? NodeDecision::NotReached : NodeDecision::Rejected);
  EXPECT_NE(t.nodes[under_rare].decision, NodeDecision::Accepted);  // off the chosen path either way
  ASSERT_GE(res.accepted_path.size(), 1u);
  EXPECT_EQ(res.accepted_path[0], likely);
  // The argmax child of the likely node has the highest probability there, so it passes too.
  ASSERT_EQ(res.accepted_path.size(), 2u);
  EXPECT_EQ(res.accepted_path[1], after_likely);
  EXPECT_EQ(t.nodes[after_likely].decision, NodeDecision::Accepted);
}
