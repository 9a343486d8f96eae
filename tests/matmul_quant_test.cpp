// cpu::linear and cpu::embedding_row on block-quantized weights (GGUF Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K
// kept in their blocks): against linear_reference (double sums over the dequantized matrix) and gguf_quant's
// dequantize_row.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/cpu/matmul.h"
#include "engine/formats/gguf_quant.h"
#include "engine/util/dtype.h"
#include "engine/util/error.h"
#include "engine/util/tensor.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

// These parity tests hold the exact path (weights dequantized, f32 products) to its tolerances; the default integer
// path for Q8_0/Q4_0/Q4_K/Q5_K/Q6_K has its own tests (quant_int8_test.cpp).
const bool kExactQuantPath = (specscope::cpu::set_quant_exact(true), true);

struct QCase {
  DType dtype;
  GgmlType ggml;
};
const std::vector<QCase> kTypes = {{DType::Q8_0, GgmlType::Q8_0}, {DType::Q4_0, GgmlType::Q4_0},
                                   {DType::Q4_1, GgmlType::Q4_1}, {DType::Q5_0, GgmlType::Q5_0},
                                   {DType::Q5_1, GgmlType::Q5_1}, {DType::Q4_K, GgmlType::Q4_K},
                                   {DType::Q5_K, GgmlType::Q5_K}, {DType::Q6_K, GgmlType::Q6_K}};

std::vector<uint8_t> random_matrix(const QCase& q, int m, int k, std::mt19937& rng, bool random_bytes = false) {
  return test::random_block_matrix(q.ggml, m, k, rng, random_bytes);
}

TensorView view(const QCase& q, const std::vector<uint8_t>& bytes, int m, int k) {
  return test::block_view(q.dtype, bytes, m, k);
}

TEST(MatmulQuant, RowBytesMatchGgml) {
  for (const auto& q : kTypes) {
    EXPECT_TRUE(dtype_is_block(q.dtype));
    EXPECT_EQ(dtype_block_elems(q.dtype), ggml_block_size(q.ggml)) << dtype_name(q.dtype);
    EXPECT_EQ(dtype_row_bytes(q.dtype, 512), ggml_row_size(q.ggml, 512)) << dtype_name(q.dtype);
    TensorView v;
    v.dtype = q.dtype;
    v.shape = {3, 512};
    EXPECT_EQ(v.nbytes(), 3 * ggml_row_size(q.ggml, 512));
  }
  EXPECT_FALSE(dtype_is_block(DType::F16));
  EXPECT_EQ(dtype_row_bytes(DType::F16, 10), 20u);
}

TEST(MatmulQuant, LinearMatchesReferenceOnDequantizedWeights) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int m = 37, k = 512;
  for (const auto& q : kTypes) for (bool random_bytes : {false, true}) {
    if (random_bytes && !ggml_can_quantize(q.ggml)) continue;  // the K-quants are random bytes already
    SCOPED_TRACE(std::string(dtype_name(q.dtype)) + (random_bytes ? " random bytes" : " quantized"));
    const auto bytes = random_matrix(q, m, k, rng, random_bytes);
    const TensorView W = view(q, bytes, m, k);
    std::vector<float> deq(size_t(m) * k);
    for (int r = 0; r < m; ++r) dequantize_row(q.ggml, bytes.data() + size_t(r) * ggml_row_size(q.ggml, k), deq.data() + size_t(r) * k, k);
    std::vector<float> bias(static_cast<size_t>(m));
    for (auto& b : bias) b = nd(rng);
    for (int n : {1, 3, 9}) {
      std::vector<float> X(size_t(n) * k), Y(size_t(n) * m), R(size_t(n) * m);
      for (auto& x : X) x = nd(rng);
      cpu::linear(X.data(), n, W, bias.data(), Y.data());
      cpu::linear_reference(X.data(), n, W, bias.data(), R.data());
      for (int t = 0; t < n; ++t)
        for (int r = 0; r < m; ++r) {
          double mag = std::fabs(bias[size_t(r)]);  // sum |w x|: the scale of the f32 rounding error
          for (int i = 0; i < k; ++i) mag += std::fabs(double(deq[size_t(r) * k + i]) * X[size_t(t) * k + i]);
          double exact = bias[size_t(r)];
          for (int i = 0; i < k; ++i) exact += double(deq[size_t(r) * k + i]) * X[size_t(t) * k + i];
          EXPECT_NEAR(R[size_t(t) * m + r], exact, 1e-6 * (1 + mag)) << "reference, row " << r;
          EXPECT_NEAR(Y[size_t(t) * m + r], exact, 1e-5 * (1 + mag)) << "n " << n << " row " << r;
        }
      // No bias.
      cpu::linear(X.data(), n, W, nullptr, Y.data());
      cpu::linear_reference(X.data(), n, W, nullptr, R.data());
      for (size_t i = 0; i < Y.size(); ++i) EXPECT_NEAR(Y[i], R[i], 1e-3 * (1 + std::fabs(R[i])));
    }
  }
}

// Block weights fork through the same team runner as f32/f16/bf16 (matmul.cpp's detail::run_team): the
// set_num_threads() cap holds (one thread means no fork at all), a call big enough to split does fork, and the
// split of rows, panels or 4-row groups over threads changes no bit of the result, on every path (fused kernels
// for 1-8 tokens where the CPU has them, dequantized 4-row groups, 16-row panels for 9+).
TEST(MatmulQuant, ThreadCapHoldsAndThreadCountDoesNotChangeResults) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int m = 613, k = 512;  // 613 rows: not a multiple of the 4-row tiles or the 16-row panels
  const bool old_backoff = cpu::set_backoff(false);  // really use the threads asked for, however busy the machine
  const int old_threads = cpu::set_num_threads(1);
  for (const auto& q : kTypes) {
    SCOPED_TRACE(dtype_name(q.dtype));
    const auto bytes = random_matrix(q, m, k, rng);
    const TensorView W = view(q, bytes, m, k);
    std::vector<float> bias(static_cast<size_t>(m));
    for (auto& b : bias) b = nd(rng);
    for (int n : {1, 3, 9, 13}) {
      std::vector<float> X(size_t(n) * k), one(size_t(n) * m), many(size_t(n) * m);
      for (auto& x : X) x = nd(rng);
      cpu::set_num_threads(1);
      auto before = cpu::threading_stats();
      cpu::linear(X.data(), n, W, bias.data(), one.data());
      ASSERT_EQ(cpu::threading_stats().parallel_calls, before.parallel_calls) << "forked with a cap of 1, n " << n;
      for (int threads : {2, 3}) {
        cpu::set_num_threads(threads);
        before = cpu::threading_stats();
        cpu::linear(X.data(), n, W, bias.data(), many.data());
        ASSERT_EQ(cpu::threading_stats().parallel_calls, before.parallel_calls + 1) << "did not fork, n " << n;
        ASSERT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float)))
            << "n " << n << " threads " << threads;
      }
    }
  }
  cpu::set_num_threads(old_threads);
  cpu::set_backoff(old_backoff);
}

// matmul_quant's vectorized dequantization (Q8_0 and the nibble formats) gives gguf_quant's reference values bit for
// bit: compared as bits, so a -0.0 (a zero code times a negative scale) turned into +0.0 is caught.
TEST(MatmulQuant, EmbeddingRowIsTheDequantizedRow) {
  std::mt19937 rng(11);
  const int m = 5, k = 256;
  for (const auto& q : kTypes) for (bool random_bytes : {false, true}) {
    const auto bytes = random_matrix(q, m, k, rng, random_bytes);
    const TensorView E = view(q, bytes, m, k);
    std::vector<float> got(static_cast<size_t>(k)), want(static_cast<size_t>(k));
    for (int r = 0; r < m; ++r) {
      cpu::embedding_row(E, r, got.data());
      dequantize_row(q.ggml, bytes.data() + size_t(r) * ggml_row_size(q.ggml, k), want.data(), k);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
          << dtype_name(q.dtype) << (random_bytes ? " random bytes" : "") << " row " << r;
    }
    EXPECT_THROW(cpu::embedding_row(E, m, got.data()), InputError);
  }
}

TEST(MatmulQuant, RejectsRowsThatAreNotWholeBlocks) {
  std::vector<uint8_t> bytes(1024);
  TensorView W;
  W.name = "bad";
  W.dtype = DType::Q8_0;
  W.shape = {2, 48};  // 48 is not a multiple of 32
  W.data = bytes.data();
  std::vector<float> X(48), Y(2);
  EXPECT_THROW(cpu::linear(X.data(), 1, W, nullptr, Y.data()), InputError);
  W.shape = {2, 32, 1};
  EXPECT_THROW(cpu::linear(X.data(), 1, W, nullptr, Y.data()), InputError);
  EXPECT_THROW(W.at(0), std::invalid_argument);
  for (DType t : {DType::Q4_1, DType::Q5_0, DType::Q5_1}) {
    W.dtype = t;
    W.shape = {2, 48};
    try {
      cpu::linear(X.data(), 1, W, nullptr, Y.data());
      ADD_FAILURE() << dtype_name(t) << ": no error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("row length 48 is not a multiple of the " + std::string(dtype_name(t)) +
                                           " block"), std::string::npos) << e.what();
    }
    EXPECT_THROW(W.at(0), std::invalid_argument);
  }
}

}  // namespace
}  // namespace specscope
