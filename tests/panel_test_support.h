#pragma once
// What the requantized-panel tests share (int8_panels_test, int4_panels_test): a dense f32 weight to pack, normal
// data, and the check that a panel kernel gives its scalar reference's bits and is batch invariant.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "engine/cpu/matmul.h"
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
// gives the reference's bits, and each token alone gives the bits it got in the batch. Run once per kernel family
// the CPU has (set_isa(Avx2) selects the AVX2 kernel on a CPU with AVX-512 VNNI too); at least one must run.
inline void expect_kernel_equals_reference_and_batch_invariant(const std::function<PanelPair(const TensorView&)>& pack,
                                                               uint32_t seed) {
  int kernels = 0;
  for (cpu::Isa isa : {cpu::Isa::Avx2, cpu::Isa::Avx512}) {
    if (!cpu::isa_supported(isa)) continue;
    cpu::set_isa(isa);
    ++kernels;
    SCOPED_TRACE(cpu::active_isa());
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
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
              << m << "x" << k << " n " << n;
          for (int t = 0; t < n; ++t) {
            std::vector<float> one(static_cast<size_t>(m));
            p.kernel(X.data() + size_t(t) * k, 1, b, one.data());
            ASSERT_EQ(0, std::memcmp(one.data(), got.data() + size_t(t) * m, size_t(m) * sizeof(float))) << t;
          }
        }
      }
    }
  }
  cpu::set_isa(cpu::Isa::Auto);
  EXPECT_GT(kernels, 0);
}

// A packed weight's reference product and the bound on each of its weights' error (row r, column i).
struct PackedForBound {
  PanelLinear reference;
  std::function<double(int r, int i)> weight_error;
};

// The reference product of a 40 x 300 normal weight for 3 tokens against the f32 product: each weight off by at most
// its bound e_w, each activation by half its token's step sx, so
//   |y - exact| <= sum_i (e_w |x_i| + |w_i| sx / 2 + e_w sx / 2)
// plus float rounding (a 1e-5 relative slack on sum |w_i x_i|). Returns the worst error as a fraction of that sum.
inline double expect_within_quantization_bound(const std::function<PackedForBound(const TensorView&)>& pack) {
  std::mt19937 rng(5);
  const int m = 40, k = 300, n = 3;
  DenseWeight d{normal_floats(size_t(m) * k, rng)};
  const PackedForBound p = pack(d.view(m, k));
  const auto X = normal_floats(size_t(n) * k, rng);
  std::vector<float> y(size_t(n) * m);
  p.reference(X.data(), n, nullptr, y.data());
  double worst_fraction = 0;
  for (int t = 0; t < n; ++t) {
    float xmax = 0;
    for (int i = 0; i < k; ++i) xmax = std::max(xmax, std::fabs(X[size_t(t) * k + i]));
    const double sx = xmax / 127.0;
    for (int r = 0; r < m; ++r) {
      double exact = 0, bound = 0, scale = 0;
      for (int i = 0; i < k; ++i) {
        const double w = d.w[size_t(r) * k + i], x = X[size_t(t) * k + i], ew = p.weight_error(r, i);
        exact += w * x;
        bound += ew * std::fabs(x) + std::fabs(w) * sx / 2 + ew * sx / 2;
        scale += std::fabs(w * x);
      }
      const double err = std::fabs(y[size_t(t) * m + r] - exact);
      EXPECT_LE(err, bound + 1e-5 * scale) << "token " << t << " row " << r;
      worst_fraction = std::max(worst_fraction, err / scale);
    }
  }
  return worst_fraction;
}

}  // namespace specscope::test
