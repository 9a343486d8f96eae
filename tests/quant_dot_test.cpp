// The fused AVX-512 dequantize-and-dot kernels (engine/cpu/quant_dot_avx512.cpp) against a double-precision
// dot of the reference dequantization (gguf_quant's dequantize_row, itself bit-exact with the gguf package): random
// blocks of every type (scales drawn from the f16 range real files use), 1 to 9 tokens, row counts that are and
// are not multiples of the 4-row tile, with and without bias. Bound: |err| <= 1e-5 * sum |w x| + 1e-6 (f32
// accumulation of a few hundred to thousand terms; the K-quant mins are applied per sub-block, in f32 too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/cpu/quant_dot.h"
#include "engine/formats/gguf_quant.h"
#include "engine/util/dtype.h"

using namespace specscope;
using specscope::cpu::detail::QuantDotType;

namespace {

struct TypeCase {
  QuantDotType q;
  GgmlType g;
  int block_elems, block_bytes;
  std::vector<int> f16_offsets;  // where the block's f16 scales sit
  const char* name;
};

std::vector<uint8_t> random_rows(const TypeCase& tc, int m, int k, std::mt19937& rng) {
  const size_t nblk = size_t(m) * size_t(k / tc.block_elems);
  std::vector<uint8_t> w(nblk * size_t(tc.block_bytes));
  for (auto& b : w) b = uint8_t(rng());
  std::uniform_real_distribution<float> scale(1e-4f, 2e-2f);
  for (size_t i = 0; i < nblk; ++i)
    for (int off : tc.f16_offsets) {
      const uint16_t h = f32_to_f16(scale(rng) * ((rng() & 1) ? 1.f : -1.f));
      std::memcpy(&w[i * size_t(tc.block_bytes) + size_t(off)], &h, 2);
    }
  return w;
}

class QuantDot : public ::testing::TestWithParam<TypeCase> {};

TEST_P(QuantDot, MatchesDoublePrecisionReference) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq"))
    GTEST_SKIP() << "this CPU has no AVX-512: the kernels are never called here";
  const TypeCase& tc = GetParam();
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int k : {256, 768, 1024}) {
    for (int m : {1, 4, 7, 13}) {
      for (int n : {1, 2, 3, 4, 5, 9}) {
        const auto w = random_rows(tc, m, k, rng);
        const size_t rb = size_t(k / tc.block_elems) * size_t(tc.block_bytes);
        std::vector<float> x(size_t(n) * k), bias(m), y(size_t(n) * m, -1.f);
        for (auto& v : x) v = nd(rng);
        for (auto& v : bias) v = nd(rng);
        const bool with_bias = (n + m) % 2 == 0;
        cpu::detail::quant_dot_rows_avx512(tc.q, w.data(), rb, k, x.data(), n, with_bias ? bias.data() : nullptr,
                                           y.data(), m, 0, m);
        std::vector<float> row(k);
        for (int r = 0; r < m; ++r) {
          dequantize_row(tc.g, w.data() + size_t(r) * rb, row.data(), k);
          for (int t = 0; t < n; ++t) {
            double s = with_bias ? bias[r] : 0.0, mag = 0.0;
            for (int c = 0; c < k; ++c) {
              s += double(row[c]) * double(x[size_t(t) * k + c]);
              mag += std::fabs(double(row[c]) * double(x[size_t(t) * k + c]));
            }
            ASSERT_NEAR(y[size_t(t) * m + r], s, 1e-5 * mag + 1e-6)
                << tc.name << " k " << k << " m " << m << " n " << n << " row " << r << " token " << t;
          }
        }
      }
    }
  }
}

TEST_P(QuantDot, WritesOnlyItsRows) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq"))
    GTEST_SKIP() << "this CPU has no AVX-512: the kernels are never called here";
  const TypeCase& tc = GetParam();
  std::mt19937 rng(3);
  const int k = 256, m = 12, n = 3;
  const auto w = random_rows(tc, m, k, rng);
  const size_t rb = size_t(k / tc.block_elems) * size_t(tc.block_bytes);
  std::vector<float> x(size_t(n) * k, 0.5f), y(size_t(n) * m, 123.f);
  cpu::detail::quant_dot_rows_avx512(tc.q, w.data(), rb, k, x.data(), n, nullptr, y.data(), m, 5, 9);
  for (int t = 0; t < n; ++t)
    for (int r = 0; r < m; ++r) {
      if (r >= 5 && r < 9) EXPECT_NE(y[size_t(t) * m + r], 123.f);
      else EXPECT_EQ(y[size_t(t) * m + r], 123.f) << "row " << r << " token " << t;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Types, QuantDot,
    ::testing::Values(TypeCase{QuantDotType::Q8_0, GgmlType::Q8_0, 32, 34, {0}, "q8_0"},
                      TypeCase{QuantDotType::Q4_0, GgmlType::Q4_0, 32, 18, {0}, "q4_0"},
                      TypeCase{QuantDotType::Q4_K, GgmlType::Q4_K, 256, 144, {0, 2}, "q4_k"},
                      TypeCase{QuantDotType::Q5_K, GgmlType::Q5_K, 256, 176, {0, 2}, "q5_k"},
                      TypeCase{QuantDotType::Q6_K, GgmlType::Q6_K, 256, 210, {208}, "q6_k"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
