#pragma once
// What the requantized-panel tests share (int8_panels_test, int4_panels_test): a dense f32 weight to pack, normal
// data, and the check that a panel kernel gives its scalar reference's bits and is batch invariant.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "engine/util/tensor.h"

namespace specscope::test {

struct DenseWeight {
  std::vector<float> w;
  TensorView view(int m, int k) const {
    TensorView v;
    v.name = "w";
    v.dtype = DType::F32;
    v.shape = {m, k};
    v.data = w.data();
    return v;
  }
};

inline std::vector<float> normal_floats(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// A linear through packed panels: Y [n][m] = X [n][k] . W^T (+ bias).
using PanelLinear = std::function<void(const float* X, int n, const float* bias, float* Y)>;
// A weight's kernel and its reference, packed from the weight it is given.
struct PanelPair {
  PanelLinear kernel, reference;
};

// For m x k weights over shapes with partial panels and tails, and 1-9 tokens (bias on odd counts): the kernel
// gives the reference's bits, and each token alone gives the bits it got in the batch.
inline void expect_kernel_equals_reference_and_batch_invariant(const std::function<PanelPair(const TensorView&)>& pack,
                                                               uint32_t seed) {
  std::mt19937 rng(seed);
  for (int m : {1, 16, 37, 256}) {
    for (int k : {3, 64, 130, 768}) {
      DenseWeight d{normal_floats(size_t(m) * k, rng)};
      const PanelPair p = pack(d.view(m, k));
      for (int n : {1, 2, 3, 4, 5, 9}) {
        const auto X = normal_floats(size_t(n) * k, rng);
        const auto bias = normal_floats(size_t(m), rng);
        const float* b = n % 2 ? bias.data() : nullptr;
        std::vector<float> want(size_t(n) * m), got(size_t(n) * m, -1.f);
        p.reference(X.data(), n, b, want.data());
        p.kernel(X.data(), n, b, got.data());
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << m << "x" << k << " n " << n;
        for (int t = 0; t < n; ++t) {
          std::vector<float> one(static_cast<size_t>(m));
          p.kernel(X.data() + size_t(t) * k, 1, b, one.data());
          ASSERT_EQ(0, std::memcmp(one.data(), got.data() + size_t(t) * m, size_t(m) * sizeof(float))) << t;
        }
      }
    }
  }
}

}  // namespace specscope::test
