// Sampling: the processed distribution follows transformers' warpers, draws follow it (chi-square), and
// the same seed reproduces the same draws.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "engine/sampling/sampler.h"
#include "engine/util/error.h"
#include "tests/test_support.h"

using namespace specscope;

static std::vector<float> test_logits() {
  // 12 tokens with a spread of probabilities and one tie at the top-k boundary.
  return {2.0f, 1.5f, 1.2f, 1.2f, 0.7f, 0.3f, 0.0f, -0.4f, -1.0f, -1.5f, -3.0f, -6.0f};
}

TEST(Sampling, ChiSquareHelperRejectsAWrongDistribution) {
  // Sanity check of the test machinery itself: a fair die sampled, tested against a loaded one, fails.
  Rng rng(1);
  std::vector<long> counts(6, 0);
  for (int i = 0; i < 60000; ++i) counts[rng.next() % 6]++;
  std::vector<double> fair(6, 1.0 / 6), loaded = {0.2, 0.16, 0.16, 0.16, 0.16, 0.16};
  EXPECT_GT(test::chi_square_test(counts, fair), 0.001);
  EXPECT_LT(test::chi_square_test(counts, loaded), 1e-6);
  EXPECT_NEAR(test::chi_square_p_value(3.84, 1), 0.05, 1e-3);
  EXPECT_NEAR(test::chi_square_p_value(18.307, 10), 0.05, 1e-3);
}

TEST(Sampling, GreedyIsArgmaxWithLowestIdOnTies) {
  std::vector<float> l = {0.f, 3.f, 3.f, 1.f};
  EXPECT_EQ(argmax(l.data(), 4), 1);
  SamplingParams p;
  Rng rng(0);
  EXPECT_EQ(sample_token(l.data(), 4, p, rng), 1);
  auto d = process_logits(l.data(), 4, p);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.ids[0], 1);
}

TEST(Sampling, TemperatureMatchesSoftmax) {
  auto l = test_logits();
  SamplingParams p;
  p.temperature = 0.7f;
  auto d = process_logits(l.data(), int(l.size()), p);
  ASSERT_EQ(d.size(), l.size());
  double z = 0;
  for (float x : l) z += std::exp(x / 0.7);
  for (size_t i = 0; i < l.size(); ++i) EXPECT_NEAR(d.prob_of(int(i)), std::exp(l[i] / 0.7) / z, 1e-6);
}

TEST(Sampling, TopKKeepsTiesAtTheBoundaryLikeTransformers) {
  auto l = test_logits();
  SamplingParams p;
  p.temperature = 1.f;
  p.top_k = 3;  // the 3rd and 4th logits tie at 1.2: both stay
  auto d = process_logits(l.data(), int(l.size()), p);
  EXPECT_EQ(d.size(), 4u);
  EXPECT_EQ(d.prob_of(4), 0.f);
  double z = std::exp(2.0) + std::exp(1.5) + 2 * std::exp(1.2);
  EXPECT_NEAR(d.prob_of(0), std::exp(2.0) / z, 1e-6);
}

TEST(Sampling, TopPKeepsSmallestPrefixReachingMass) {
  auto l = test_logits();
  SamplingParams p;
  p.temperature = 1.f;
  p.top_p = 0.8f;
  auto d = process_logits(l.data(), int(l.size()), p);
  auto full = softmax_probs(l.data(), int(l.size()));
  // Reference: sort descending, keep while the mass before the token is < top_p.
  double cum = 0;
  size_t expect = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    if (cum >= 0.8) break;
    cum += full[i];  // logits are already in descending order (ties adjacent)
    ++expect;
  }
  EXPECT_EQ(d.size(), expect);
  double kept = 0;
  for (size_t i = 0; i < expect; ++i) kept += full[i];
  EXPECT_NEAR(d.prob_of(0), full[0] / kept, 1e-6);
}

TEST(Sampling, MinPDropsTokensBelowFractionOfTop) {
  auto l = test_logits();
  SamplingParams p;
  p.temperature = 1.f;
  p.min_p = 0.2f;
  auto d = process_logits(l.data(), int(l.size()), p);
  auto full = softmax_probs(l.data(), int(l.size()));
  for (size_t i = 0; i < full.size(); ++i) EXPECT_EQ(d.prob_of(int(i)) > 0, full[i] >= 0.2f * full[0]) << i;
}

TEST(Sampling, SameSeedSameDrawsDifferentSeedDifferentDraws) {
  auto l = test_logits();
  SamplingParams p;
  p.temperature = 1.f;
  auto draw = [&](uint64_t seed) {
    Rng rng(seed);
    std::vector<int> v;
    for (int i = 0; i < 200; ++i) v.push_back(sample_token(l.data(), int(l.size()), p, rng));
    return v;
  };
  EXPECT_EQ(draw(42), draw(42));
  EXPECT_NE(draw(42), draw(43));
}

// Empirical frequencies of many draws match the processed distribution, for each warper combination.
TEST(Sampling, EmpiricalFrequenciesMatchProcessedDistribution) {
  auto l = test_logits();
  struct Case { float t; int k; float p; float minp; };
  for (Case c : {Case{1.f, 0, 1.f, 0.f}, Case{0.7f, 0, 0.9f, 0.f}, Case{1.3f, 5, 1.f, 0.f}, Case{1.f, 6, 0.85f, 0.f},
                 Case{0.9f, 0, 1.f, 0.1f}}) {
    SamplingParams p;
    p.temperature = c.t;
    p.top_k = c.k;
    p.top_p = c.p;
    p.min_p = c.minp;
    auto d = process_logits(l.data(), int(l.size()), p);
    Rng rng(7);
    std::vector<long> counts(l.size(), 0);
    const int N = 50000;
    for (int i = 0; i < N; ++i) counts[sample_token(l.data(), int(l.size()), p, rng)]++;
    std::vector<double> probs(l.size());
    for (size_t i = 0; i < l.size(); ++i) probs[i] = d.prob_of(int(i));
    for (size_t i = 0; i < l.size(); ++i)
      if (probs[i] == 0) EXPECT_EQ(counts[i], 0) << "token " << i << " outside the kept set was drawn";
    EXPECT_GT(test::chi_square_test(counts, probs), 0.001) << "T=" << c.t << " k=" << c.k << " p=" << c.p;
  }
}

TEST(Sampling, InvalidParametersAreInputErrors) {
  SamplingParams p;
  p.temperature = -1;
  EXPECT_THROW(p.validate(), InputError);
  p = {};
  p.top_p = 0;
  EXPECT_THROW(p.validate(), InputError);
  p = {};
  p.top_k = -2;
  EXPECT_THROW(p.validate(), InputError);
}

// A vocabulary-sized row with many tied logits (process_logits orders it with top_k_indices' radix pass): every id
// once, in descending logit order with ties by lower id; top-k keeps exactly the ids at or above the k-th logit (ties
// included, as transformers does), in that same order; probabilities are the tempered softmax over what is kept.
TEST(Sampling, VocabularySizedRowsKeepTheStrictOrderAndTopKTies) {
  std::mt19937 gen(3);
  std::normal_distribution<float> g(0.f, 2.f);
  const int n = 5000;
  std::vector<float> l(n);
  for (auto& x : l) x = gen() % 3 == 0 ? float(int(gen() % 5)) : g(gen);  // every 3rd on a few values: ties
  auto check_order = [&](const Distribution& d) {
    for (size_t i = 0; i + 1 < d.size(); ++i) {
      const float a = l[size_t(d.ids[i])], b = l[size_t(d.ids[i + 1])];
      ASSERT_TRUE(a > b || (a == b && d.ids[i] < d.ids[i + 1])) << "at " << i;
      ASSERT_GE(d.probs[i], d.probs[i + 1]) << "at " << i;
    }
  };
  SamplingParams p;
  p.temperature = 0.8f;
  const Distribution all = process_logits(l.data(), n, p);
  ASSERT_EQ(all.size(), size_t(n));
  check_order(all);
  std::vector<bool> seen(n, false);
  for (int32_t id : all.ids) seen[size_t(id)] = true;
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), n);

  p.top_k = 300;
  const Distribution top = process_logits(l.data(), n, p);
  check_order(top);
  std::vector<float> sorted = l;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const float kth = sorted[299];
  const auto at_or_above = size_t(std::count_if(l.begin(), l.end(), [&](float x) { return x >= kth; }));
  ASSERT_GT(at_or_above, 300u) << "the test row should tie at the k-th logit";
  ASSERT_EQ(top.size(), at_or_above);
  double z = 0;
  for (float x : l)
    if (x >= kth) z += std::exp(double(x) / 0.8);
  for (size_t i = 0; i < top.size(); ++i)
    ASSERT_NEAR(top.probs[i], std::exp(double(l[size_t(top.ids[i])]) / 0.8) / z, 1e-6) << "at " << i;
}
