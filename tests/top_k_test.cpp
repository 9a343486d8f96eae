// top_k_indices: the selection every drafter's tree depends on, so its order is pinned exactly (larger first,
// ties to the lower index) and checked against a brute-force stable sort on random inputs with many ties.
#include "engine/sampling/top_k.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace specscope;

namespace {

using V = std::vector<int>;

TEST(TopK, DescendingWithTiesToLowerIndex) {
  const float v[] = {0.5f, 2.f, -1.f, 2.f, 0.5f, 3.f};
  EXPECT_EQ(top_k_indices(v, 6, 1), (V{5}));
  EXPECT_EQ(top_k_indices(v, 6, 2), (V{5, 1}));        // 1 and 3 tie at 2: index 1 first
  EXPECT_EQ(top_k_indices(v, 6, 3), (V{5, 1, 3}));
  EXPECT_EQ(top_k_indices(v, 6, 5), (V{5, 1, 3, 0, 4}));  // 0 and 4 tie at 0.5
  EXPECT_EQ(top_k_indices(v, 6, 6), (V{5, 1, 3, 0, 4, 2}));
}

TEST(TopK, AllEqualKeepsIndexOrder) {
  const std::vector<float> v(7, -2.f);
  EXPECT_EQ(top_k_indices(v.data(), 7, 4), (V{0, 1, 2, 3}));
}

TEST(TopK, KClampedToRange) {
  const float v[] = {1.f, 3.f, 2.f};
  EXPECT_EQ(top_k_indices(v, 3, 10), (V{1, 2, 0}));  // k > n: all n, sorted
  EXPECT_TRUE(top_k_indices(v, 3, 0).empty());
  EXPECT_TRUE(top_k_indices(v, 3, -4).empty());
  EXPECT_TRUE(top_k_indices(v, 0, 3).empty());
}

TEST(TopK, InfinitiesAndSignedZeros) {
  const float inf = INFINITY;
  const float v[] = {-inf, 0.f, -0.f, inf, -inf};
  // -0 == +0 is a tie (index order); -inf ties with -inf.
  EXPECT_EQ(top_k_indices(v, 5, 5), (V{3, 1, 2, 0, 4}));
}

TEST(TopK, NanRanksLast) {
  const float v[] = {NAN, 1.f, NAN, -5.f};
  EXPECT_EQ(top_k_indices(v, 4, 4), (V{1, 3, 0, 2}));
  EXPECT_EQ(top_k_indices(v, 4, 1), (V{1}));
}

// The nth_element path must give exactly what a stable sort by descending value gives, for every k.
TEST(TopK, MatchesStableSortOnRandomInputs) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + int(rng() % 300);
    std::vector<float> v(n);
    for (auto& x : v) x = float(int(rng() % 9)) * 0.25f - 1.f;  // few distinct values: many ties
    std::vector<int> ref(n);
    std::iota(ref.begin(), ref.end(), 0);
    std::stable_sort(ref.begin(), ref.end(), [&](int a, int b) { return v[a] > v[b]; });
    for (int k : {0, 1, 2, 5, 10, 32, 33, n / 3, n - 1, n, n + 5}) {  // both paths: k <= 32 and beyond
      std::vector<int> want(ref.begin(), ref.begin() + std::clamp(k, 0, n));
      ASSERT_EQ(top_k_indices(v.data(), n, k), want) << "n=" << n << " k=" << k;
    }
  }
}

// Vocabulary-sized inputs take the radix path (process_logits orders the whole vocabulary with it): the same order
// as a stable comparison sort, over values of every kind a float has (signed zeros, infinities, subnormals, NaN, both
// signs and many exponents) and with many ties.
TEST(TopK, RadixPathMatchesStableSortOnVocabularySizedInputs) {
  std::mt19937 rng(11);
  const float specials[] = {0.f, -0.f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 3.5f, -3.5f, 1e30f, -1e-30f};
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 1024 + int(rng() % 9000);
    std::vector<float> v(n);
    std::normal_distribution<float> g(0.f, trial % 2 ? 3.f : 1e4f);
    for (auto& x : v) {
      const unsigned r = rng() % 10;
      x = r == 0 ? specials[rng() % std::size(specials)] : r < 4 ? float(int(rng() % 7)) - 3.f : g(rng);
    }
    auto before = [&](int a, int b) {
      const bool na = std::isnan(v[a]), nb = std::isnan(v[b]);
      if (na != nb) return nb;
      return !na && v[a] > v[b];
    };
    std::vector<int> ref(n);
    std::iota(ref.begin(), ref.end(), 0);
    std::stable_sort(ref.begin(), ref.end(), before);
    for (int k : {n, n - 1, n / 2, n / 64 + 1, 100}) {
      std::vector<int> want(ref.begin(), ref.begin() + k);
      ASSERT_EQ(top_k_indices(v.data(), n, k), want) << "trial " << trial << " n=" << n << " k=" << k;
    }
  }
}

}  // namespace
