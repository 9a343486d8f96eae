// The integer dot path for block-quantized weights (engine/cpu/quant_int8.h, the default of cpu::linear for Q8_0,
// Q4_0, Q4_K, Q5_K, Q6_K): the activation quantizer; every SIMD kernel family this CPU runs against the scalar
// reference, bit for bit; the stated error bound against the exact product with the dequantized weights; a token's
// outputs the same bits whatever other tokens share the call (lossless speculative decoding verifies several tokens
// in one call) and whatever the thread count; and the switch to the exact path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "engine/cpu/matmul.h"
#include "engine/cpu/kquant_lanes.h"
#include "engine/cpu/quant_int8.h"
#include "engine/formats/gguf_k_scales.h"
#include "engine/formats/gguf_quant.h"
#include "tests/test_support.h"
#include "engine/util/dtype.h"
#include "engine/util/tensor.h"

namespace specscope {
namespace {

using cpu::detail::ActQ8;
using cpu::detail::Int8Isa;
using cpu::detail::Int8Type;

struct TypeCase {
  DType dtype;
  GgmlType ggml;
  Int8Type it;
};
const std::vector<TypeCase> kTypes = {{DType::Q8_0, GgmlType::Q8_0, Int8Type::Q8_0},
                                      {DType::Q4_0, GgmlType::Q4_0, Int8Type::Q4_0},
                                      {DType::Q4_K, GgmlType::Q4_K, Int8Type::Q4_K},
                                      {DType::Q5_K, GgmlType::Q5_K, Int8Type::Q5_K},
                                      {DType::Q6_K, GgmlType::Q6_K, Int8Type::Q6_K},
                                      {DType::Q5_0, GgmlType::Q5_0, Int8Type::Q5_0},  // after: [2..4] are K-quants
                                      {DType::Q4_1, GgmlType::Q4_1, Int8Type::Q4_1},
                                      {DType::Q5_1, GgmlType::Q5_1, Int8Type::Q5_1},
                                      {DType::MXFP4, GgmlType::MXFP4, Int8Type::MXFP4}};

// Scales in [1e-4, 2e-2): small enough that random K-quant mins keep the products in a realistic range.
std::vector<uint8_t> random_matrix(const TypeCase& q, int m, int k, std::mt19937& rng, bool random_bytes) {
  return test::random_block_matrix(q.ggml, m, k, rng, random_bytes, 1e-4f, 2e-2f);
}

TensorView view(const TypeCase& q, const std::vector<uint8_t>& bytes, int m, int k) {
  return test::block_view(q.dtype, bytes, m, k);
}

std::vector<float> normal(size_t count, std::mt19937& rng, float sd = 1.f) {
  std::normal_distribution<float> nd(0.f, sd);
  std::vector<float> v(count);
  for (auto& x : v) x = nd(rng);
  return v;
}

// The token counts the kernel tests run at row length k: every count 1..66 (each token tile and remainder shape) at
// k = 512 and 1280, a spread elsewhere.
std::vector<int> token_counts(int k) {
  if (k != 512 && k != 1280) return {1, 2, 3, 5, 7, 64, 70};
  std::vector<int> ns;
  for (int n = 1; n <= 66; ++n) ns.push_back(n);
  return ns;
}

// One kernel call's inputs: n normal token rows of k and their codes, and a bias for m rows on odd n (none on even).
struct CallInputs {
  std::vector<float> X, bias;
  ActQ8 a;
  const float* b = nullptr;
  CallInputs(int n, int k, int m, std::mt19937& rng) : X(normal(size_t(n) * k, rng)), bias(normal(m, rng)) {
    b = n % 2 ? bias.data() : nullptr;
    cpu::detail::quantize_act(X.data(), n, k, &a);
  }
};

// Runs the tests on the fast path, restoring the previous setting.
struct FastPath {
  bool old = cpu::set_quant_exact(false);
  ~FastPath() { cpu::set_quant_exact(old); }
};

TEST(QuantInt8, ActivationCodesAreRoundedWithinHalfAScale) {
  std::mt19937 rng(3);
  const int n = 3, k = 96;  // three blocks, padded to a group of 16
  auto X = normal(size_t(n) * k, rng, 2.f);
  for (int i = 32; i < 64; ++i) X[i] = 0.f;                                  // token 0, block 1: all zero
  X[size_t(k) + 70] = std::numeric_limits<float>::quiet_NaN();                // token 1, block 2
  ActQ8 a;
  cpu::detail::quantize_act(X.data(), n, k, &a);
  ASSERT_EQ(a.kp, 512);
  for (int t = 0; t < n; ++t)
    for (int b = 0; b < a.blocks(); ++b) {
      const float d = a.ds(t)[b];
      int sum = 0, lo = 0;
      for (int i = 0; i < 32; ++i) {
        const int q = a.code(t, b, i);
        sum += q;
        if (i < 16) lo += q;
        ASSERT_LE(std::abs(q), 127);
        if (b >= 3) {
          ASSERT_EQ(q, 0) << "padding";
          continue;
        }
        if (t == 1 && b == 2) continue;
        const float x = X[size_t(t) * k + size_t(b) * 32 + size_t(i)];
        ASSERT_LE(std::fabs(x - d * float(q)), d / 2 * (1 + 1e-6f) + 1e-30f) << "t " << t << " b " << b << " i " << i;
      }
      ASSERT_EQ(a.sums32(t)[b], sum);
      ASSERT_EQ(a.sums16(t)[2 * b], lo);
      ASSERT_EQ(a.sums16(t)[2 * b + 1], sum - lo);
      if (b >= 3) ASSERT_EQ(d, 0.f);
    }
  EXPECT_EQ(a.ds(0)[1], 0.f);
  EXPECT_TRUE(std::isnan(a.ds(1)[2]));
}

// The vectorized quantizers (quantize_act picks AVX-512's, else AVX2's) give the scalar reference's bytes:
// normal, zero, tiny (a scale below FLT_MIN), huge and non-finite blocks, padding of partial groups.
TEST(QuantInt8, ActivationQuantizerEqualsScalarReference) {
  std::mt19937 rng(4);
  int avx2_runs = 0;
  for (int k : {32, 96, 512, 2048 + 64}) {
    const int n = 5;
    auto X = normal(size_t(n) * k, rng, 3.f);
    for (int i = 0; i < 32 && i < k; ++i) X[i] = 0.f;                                      // token 0, block 0
    if (k >= 64) for (int i = 32; i < 64; ++i) X[i] *= 1e-39f;                             // subnormal scale
    if (k >= 96) for (int i = 64; i < 96; ++i) X[i] *= 1e36f;                              // huge
    X[size_t(k) + 3] = std::numeric_limits<float>::quiet_NaN();                          // token 1
    X[size_t(2 * k) + size_t(k) - 1] = -std::numeric_limits<float>::infinity();           // token 2, last block
    for (int i = 0; i < k; ++i) X[size_t(3 * k) + size_t(i)] = float(i % 7) - 3.f;        // ties at x * id
    ActQ8 r;
    cpu::detail::quantize_act_scalar(X.data(), n, k, &r);
    const auto same_as_scalar = [&](const ActQ8& a, const char* which) {
      ASSERT_EQ(a.kp, r.kp) << which;
      ASSERT_EQ(a.q, r.q) << which << " k " << k;
      ASSERT_EQ(0, std::memcmp(a.d.data(), r.d.data(), a.d.size() * sizeof(float))) << which << " k " << k;
      ASSERT_EQ(a.s32, r.s32) << which << " k " << k;
      ASSERT_EQ(a.s16, r.s16) << which << " k " << k;
    };
    ActQ8 a;
    cpu::detail::quantize_act(X.data(), n, k, &a);
    same_as_scalar(a, "quantize_act");
    ActQ8 a2;
    if (cpu::detail::quantize_act_avx2(X.data(), n, k, &a2)) {
      same_as_scalar(a2, "avx2");
      ++avx2_runs;
    }
  }
  std::printf("[ int8     ] AVX2 quantizer checked: %s\n", avx2_runs ? "yes" : "no (no AVX2 on this CPU)");
}

TEST(QuantInt8, ScaleWordsMatchK4ScaleMin) {
  std::mt19937 rng(5);
  for (int rep = 0; rep < 2000; ++rep) {
    uint8_t q[12];
    for (auto& b : q) b = uint8_t(rng());
    const auto w = cpu::detail::k4_scale_min_words(q);
    for (int j = 0; j < 8; ++j) {
      int sc, mn;
      k4_scale_min(j, q, &sc, &mn);
      ASSERT_EQ(int((w.sc[j / 4] >> (8 * (j % 4))) & 0xFF), sc);
      ASSERT_EQ(int((w.mn[j / 4] >> (8 * (j % 4))) & 0xFF), mn);
    }
  }
}

// Every SIMD family this CPU runs gives the scalar reference's bits: whole and partial groups of 16 blocks, every
// token count from 1 to 66 (each register tile and remainder) and 70, 7 and 13 rows (row tiles with a remainder),
// rows of 1 to 10 groups, with and without bias; also with the rows split at odd places, as threads split them.
TEST(QuantInt8, SimdKernelsEqualScalarReferenceBitForBit) {
  std::mt19937 rng(7);
  int families = 0;
  for (Int8Isa isa : {Int8Isa::Avx2, Int8Isa::AvxVnni, Int8Isa::Avx512Vnni}) {
    if (!cpu::detail::int8_isa_supported(isa)) continue;
    ++families;
    const auto fn = cpu::detail::int8_rows(isa);
    for (const auto& q : kTypes)
      for (bool random_bytes : {false, true}) {
        const bool k_quant = dtype_block_elems(q.dtype) == 256;
        // (4864, 4640: rows of 9-10 groups, which the AVX-512 panel path splits into segments of 4.)
        for (int k : k_quant ? std::vector<int>{256, 512, 1280, 4864} : std::vector<int>{32, 96, 512, 1056, 4640}) {
          const int m = random_bytes ? 13 : 7;  // odd: the kernels' row tiles leave a remainder
          const auto W = random_matrix(q, m, k, rng, random_bytes);
          const size_t rb = ggml_row_size(q.ggml, k);
          for (int n : token_counts(k)) {
            const CallInputs in(n, k, m, rng);
            const ActQ8& a = in.a;
            const float* b = in.b;
            std::vector<float> want(size_t(n) * m, -1.f), got(size_t(n) * m, -2.f);
            cpu::detail::int8_rows_scalar(q.it, W.data(), rb, a, b, want.data(), m, 0, m);
            fn(q.it, W.data(), rb, a, b, got.data(), m, 0, m);
            ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
                << cpu::detail::int8_isa_name(isa) << " " << dtype_name(q.dtype) << (random_bytes ? " random" : "")
                << " k " << k << " n " << n;
            std::fill(got.begin(), got.end(), -3.f);
            fn(q.it, W.data(), rb, a, b, got.data(), m, 0, 3);  // rows [0, 3) and [3, m) by separate calls
            fn(q.it, W.data(), rb, a, b, got.data(), m, 3, m);
            ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
                << cpu::detail::int8_isa_name(isa) << " " << dtype_name(q.dtype) << " split, k " << k << " n " << n;
          }
        }
      }
  }
  if (families == 0) GTEST_SKIP() << "no SIMD family on this CPU: only the scalar reference runs";
  std::printf("[ int8     ] families checked against the scalar reference: %d (active: %s)\n", families,
              cpu::detail::int8_isa_name(cpu::detail::int8_active_isa()));
}

// The largest sums the kernels form: every weight code at its extreme (nibbles 15, 5-bit codes 31, Q6_K's 63, Q8_0's
// -128, MXFP4's 28) against activation codes all +127 or all -127, so every product has one sign. The AVX2 kernels add up to 8
// steps' vpmaddubsw pair sums in int16 before widening (quant_int8_ymm.h): one step more than int16_run_steps allows,
// or a saturating pair, would change these sums, and the scalar reference's bits would not match.
TEST(QuantInt8, KernelsAreExactAtTheLargestCodes) {
  const auto put_f16 = [](uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); };
  int families = 0;
  for (Int8Isa isa : {Int8Isa::Avx2, Int8Isa::AvxVnni, Int8Isa::Avx512Vnni}) {
    if (!cpu::detail::int8_isa_supported(isa)) continue;
    ++families;
    const auto fn = cpu::detail::int8_rows(isa);
    for (const auto& q : kTypes) {
      const int m = 5, k = 1024;
      const size_t rb = ggml_row_size(q.ggml, k);
      const size_t block_bytes = q.it == Int8Type::Q8_0 ? size_t(cpu::detail::kQ8_0Bytes) : rb / size_t(k / dtype_block_elems(q.dtype));
      std::vector<uint8_t> W(size_t(m) * rb, q.it == Int8Type::Q8_0 ? 0x80 : 0xFF);
      for (size_t b = 0; b < W.size() / block_bytes; ++b) {
        uint8_t* blk = W.data() + b * block_bytes;
        switch (q.it) {
          case Int8Type::Q4_K:
          case Int8Type::Q5_K: put_f16(blk, 0x3C00), put_f16(blk + 2, 0x2C00); break;  // d 1, dmin 1/16
          case Int8Type::Q6_K:
            for (int i = 0; i < 16; ++i) blk[192 + i] = i % 2 ? 0x80 : 0x7F;  // scales -128 and 127
            put_f16(blk + 208, 0x3C00);
            break;
          case Int8Type::MXFP4:  // code 7 (+6, read as 28: the largest unsigned code) everywhere, scale 2^0
            std::memset(blk + 1, 0x77, 16);
            blk[0] = 128;
            break;
          default:
            put_f16(blk, 0x3C00);
            if (cpu::detail::nibble_block(q.it).has_min) put_f16(blk + 2, 0x2C00);
        }
      }
      std::vector<float> X(size_t(4) * k);
      for (size_t i = 0; i < X.size(); ++i) X[i] = (i / size_t(k)) % 2 ? -1.f : 1.f;  // tokens +1, -1, +1, -1
      ActQ8 a;
      cpu::detail::quantize_act(X.data(), 4, k, &a);
      ASSERT_EQ(a.code(1, 0, 0), -127);
      std::vector<float> want(size_t(4) * m, -1.f), got(size_t(4) * m, -2.f);
      cpu::detail::int8_rows_scalar(q.it, W.data(), rb, a, nullptr, want.data(), m, 0, m);
      fn(q.it, W.data(), rb, a, nullptr, got.data(), m, 0, m);
      ASSERT_TRUE(std::isfinite(want[0]) && want[0] != 0.f) << dtype_name(q.dtype);
      ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
          << cpu::detail::int8_isa_name(isa) << " " << dtype_name(q.dtype) << ": " << want[0] << " vs " << got[0];
    }
  }
  if (families == 0) GTEST_SKIP() << "no SIMD family on this CPU: only the scalar reference runs";
}

// Q8_0's and Q4_0's (units of 8 blocks), Q4_K's, Q5_K's and Q6_K's lanes copies (engine/cpu/kquant_lanes.h, made with the CPU's
// copy of the weights): every code where the layout says, the scale bytes untouched (Q4_0's gathered first); every SIMD family this CPU runs on the copy, and the scalar
// reference on either layout, give the bits of the reference on ggml's layout, for whole and partial groups, every token count 1-66
// and split rows.
TEST(QuantInt8, LanesCopiesGiveTheBitsOfGgmlsLayouts) {
  // Which tensors get one: Q4_0 and Q8_0 only where a row is whole units of 8 blocks (Qwen3-30B-A3B's 768-wide expert
  // rows, not Qwen1.5-MoE's 1408-wide ones), the K-quants always, no other type.
  EXPECT_TRUE(cpu::tensor_takes_lanes(DType::Q4_0, 768));
  EXPECT_FALSE(cpu::tensor_takes_lanes(DType::Q4_0, 1408));
  EXPECT_TRUE(cpu::tensor_takes_lanes(DType::Q6_K, 2048));
  EXPECT_TRUE(cpu::tensor_takes_lanes(DType::Q8_0, 2048));
  EXPECT_FALSE(cpu::tensor_takes_lanes(DType::Q8_0, 896));
  EXPECT_FALSE(cpu::tensor_takes_lanes(DType::Q5_0, 2048));
  std::mt19937 rng(29);
  struct LanesCase {
    const TypeCase& q;
    Int8Type lanes;
  };
  for (const LanesCase& c : {LanesCase{kTypes[0], Int8Type::Q8_0_Lanes}, LanesCase{kTypes[1], Int8Type::Q4_0_Lanes},
                             LanesCase{kTypes[2], Int8Type::Q4_K_Lanes},
                             LanesCase{kTypes[3], Int8Type::Q5_K_Lanes}, LanesCase{kTypes[4], Int8Type::Q6_K_Lanes}})
    for (bool random_bytes : {false, true})
      for (int k : {256, 512, 1280, 4864}) {
        const int m = 13;
        const auto W = random_matrix(c.q, m, k, rng, random_bytes);
        auto L = W;
        const size_t super_blocks = size_t(m) * size_t(k) / 256, sb_bytes = cpu::lanes_super_block_bytes(c.q.dtype);
        ASSERT_EQ(super_blocks * sb_bytes, W.size());
        cpu::to_lanes(c.q.dtype, W.data(), L.data(), super_blocks);
        for (size_t sb = 0; sb < super_blocks; ++sb) {
          const uint8_t* g = W.data() + sb * sb_bytes;
          const uint8_t* l = L.data() + sb * sb_bytes;
          for (int b = 0; b < 8; ++b)
            for (int e = 0; e < 32; ++e) {
              if (c.q.dtype == DType::Q8_0) {
                ASSERT_EQ(cpu::q8_0_lanes_code(l, b, e), int(int8_t(g[34 * b + 2 + e])))
                    << "unit " << sb << " block " << b << " code " << e;
              } else if (c.q.dtype == DType::Q4_0) {
                const uint8_t byte = g[18 * b + 2 + e % 16];
                ASSERT_EQ(cpu::q4_0_lanes_code(l, b, e), e < 16 ? byte & 15 : byte >> 4)
                    << "unit " << sb << " block " << b << " code " << e;
              } else if (c.q.dtype == DType::Q4_K) {
                ASSERT_EQ(cpu::q4k_lanes_code(l, b, e), (g[16 + 32 * (b / 2) + e] >> (4 * (b % 2))) & 15)
                    << "super-block " << sb << " block " << b << " code " << e;
              } else if (c.q.dtype == DType::Q5_K) {
                const int want = ((g[48 + 32 * (b / 2) + e] >> (4 * (b % 2))) & 15) | ((g[16 + e] >> b) & 1) << 4;
                ASSERT_EQ(cpu::q5k_lanes_code(l, b, e), want) << "super-block " << sb << " block " << b << " code " << e;
              } else {
                const int h = b / 4, r = b % 4;
                const int want = ((g[64 * h + 32 * (r & 1) + e] >> (4 * (r >> 1))) & 15) |
                                 ((g[128 + 32 * h + e] >> (2 * r)) & 3) << 4;
                ASSERT_EQ(cpu::q6k_lanes_code(l, b, e), want) << "super-block " << sb << " block " << b << " code " << e;
              }
            }
          if (c.q.dtype == DType::Q4_0 || c.q.dtype == DType::Q8_0) {
            const int stride = c.q.dtype == DType::Q4_0 ? 18 : 34;
            for (int b = 0; b < 8; ++b) ASSERT_EQ(0, std::memcmp(g + stride * b, l + 2 * b, 2)) << "block " << b << "'s d";
          } else if (c.q.dtype != DType::Q6_K) ASSERT_EQ(0, std::memcmp(g, l, 16)) << "d, dmin and the scales stay";
          else ASSERT_EQ(0, std::memcmp(g + 192, l + 192, 18)) << "the scales and d stay";
        }
        const size_t rb = ggml_row_size(c.q.ggml, k);
        for (int n : token_counts(k)) {
          const CallInputs in(n, k, m, rng);
          const ActQ8& a = in.a;
          const float* b = in.b;
          std::vector<float> want(size_t(n) * m, -1.f), got(size_t(n) * m, -2.f);
          cpu::detail::int8_rows_scalar(c.q.it, W.data(), rb, a, b, want.data(), m, 0, m);
          cpu::detail::int8_rows_scalar(c.lanes, L.data(), rb, a, b, got.data(), m, 0, m);
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
              << dtype_name(c.q.dtype) << " scalar, k " << k << " n " << n;
          for (Int8Isa isa : {Int8Isa::Avx2, Int8Isa::AvxVnni, Int8Isa::Avx512Vnni}) {
            if (!cpu::detail::int8_isa_supported(isa)) continue;
            const auto fn = cpu::detail::int8_rows(isa);
            std::fill(got.begin(), got.end(), -3.f);
            fn(c.lanes, L.data(), rb, a, b, got.data(), m, 0, m);
            ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
                << dtype_name(c.q.dtype) << " " << cpu::detail::int8_isa_name(isa) << (random_bytes ? " random" : "")
                << " k " << k << " n " << n;
            std::fill(got.begin(), got.end(), -4.f);
            fn(c.lanes, L.data(), rb, a, b, got.data(), m, 0, 3);
            fn(c.lanes, L.data(), rb, a, b, got.data(), m, 3, m);
            ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
                << dtype_name(c.q.dtype) << " " << cpu::detail::int8_isa_name(isa) << " split, k " << k << " n " << n;
          }
        }
      }
  if (!cpu::detail::int8_isa_supported(Int8Isa::Avx2)) GTEST_SKIP() << "no SIMD family here: only the scalar reference ran";
}

// cpu::linear reads a Q8_0, Q4_0, Q4_K, Q5_K or Q6_K weight's lanes copy on every kernel family unless the knob says not to:
// given the lanes copy of another matrix, it computes that matrix's product; with lanes=0, the weight's own.
TEST(QuantInt8, LinearReadsTheLanesCopyUnlessTheKnobSaysNot) {
  FastPath fast;
  std::mt19937 rng(31);
  for (const TypeCase* q : {&kTypes[0], &kTypes[1], &kTypes[2], &kTypes[3], &kTypes[4]}) {
    SCOPED_TRACE(std::string(dtype_name(q->dtype)));
    const int m = 21, k = 1024, n = 5;
    const auto W = random_matrix(*q, m, k, rng, false), W2 = random_matrix(*q, m, k, rng, false);
    auto lanes2 = std::make_shared<std::vector<uint8_t>>(W2);
    cpu::to_lanes(q->dtype, lanes2->data(), lanes2->data(), size_t(m) * size_t(k) / 256);
    TensorView Wv = view(*q, W, m, k);
    const TensorView W2v = view(*q, W2, m, k);
    const auto X = normal(size_t(n) * k, rng);
    std::vector<float> own(size_t(n) * m), other(size_t(n) * m), got(size_t(n) * m);
    cpu::linear(X.data(), n, Wv, nullptr, own.data());
    cpu::linear(X.data(), n, W2v, nullptr, other.data());
    ASSERT_NE(0, std::memcmp(own.data(), other.data(), own.size() * sizeof(float)));
    Wv.lanes = std::shared_ptr<const void>(lanes2, lanes2->data());
    for (cpu::Isa isa : {cpu::Isa::Auto, cpu::Isa::Avx2, cpu::Isa::Scalar}) {
      cpu::set_isa(isa);
      SCOPED_TRACE(cpu::active_isa());
      cpu::linear(X.data(), n, Wv, nullptr, got.data());
      EXPECT_EQ(0, std::memcmp(got.data(), other.data(), got.size() * sizeof(float))) << "the lanes copy is read";
    }
    cpu::set_isa(cpu::Isa::Auto);
    cpu::detail::set_kquant_lanes(0);
    cpu::linear(X.data(), n, Wv, nullptr, got.data());
    cpu::detail::set_kquant_lanes(-1);
    EXPECT_EQ(0, std::memcmp(got.data(), own.data(), got.size() * sizeof(float))) << "lanes=0: the weight's own bytes";
  }
}

// quant_int8.h's bound, from the data: |fast - exact| <= sum_b (d_b / 2) sum_{i in b} |w_i| + 1e-5 sum |w_i x_i|,
// and on normal data the error is a small fraction of the output's scale (sum |w_i x_i|).
TEST(QuantInt8, FastPathWithinStatedErrorBound) {
  FastPath fast;
  std::mt19937 rng(11);
  const int m = 19, k = 1024;
  for (const auto& q : kTypes) {
    const auto W = random_matrix(q, m, k, rng, false);
    const TensorView Wv = view(q, W, m, k);
    std::vector<float> deq(size_t(m) * k);
    for (int r = 0; r < m; ++r) dequantize_row(q.ggml, W.data() + size_t(r) * ggml_row_size(q.ggml, k), deq.data() + size_t(r) * k, k);
    double worst_rel = 0, worst_bound_use = 0;
    for (int n : {1, 2, 4, 8, 16, 33, 64}) {
      const auto X = normal(size_t(n) * k, rng);
      std::vector<float> Y(size_t(n) * m);
      cpu::linear(X.data(), n, Wv, nullptr, Y.data());
      ActQ8 a;
      cpu::detail::quantize_act(X.data(), n, k, &a);
      for (int t = 0; t < n; ++t)
        for (int r = 0; r < m; ++r) {
          double exact = 0, l1 = 0, bound = 0;
          for (int b = 0; b < k / 32; ++b) {
            double wsum = 0;
            for (int i = b * 32; i < b * 32 + 32; ++i) {
              const double w = deq[size_t(r) * k + i], x = X[size_t(t) * k + i];
              exact += w * x;
              l1 += std::fabs(w * x);
              wsum += std::fabs(w);
            }
            bound += a.ds(t)[b] / 2.0 * wsum;
          }
          bound = bound * (1 + 1e-6) + 1e-5 * l1;
          const double err = std::fabs(Y[size_t(t) * m + r] - exact);
          ASSERT_LE(err, bound) << dtype_name(q.dtype) << " n " << n << " t " << t << " r " << r;
          ASSERT_LE(err, 0.01 * l1) << dtype_name(q.dtype) << " n " << n << " t " << t << " r " << r;
          worst_rel = std::max(worst_rel, err / l1);
          worst_bound_use = std::max(worst_bound_use, err / bound);
        }
    }
    std::printf("[ int8     ] %s: worst |fast - exact| / sum|w x| %.2e, worst error / bound %.2f\n", std::string(dtype_name(q.dtype)).c_str(),
                worst_rel, worst_bound_use);
  }
}

// A token's outputs are the same bits alone or among 2-64 tokens (every count), at any position.
TEST(QuantInt8, TokenResultsDoNotDependOnTheBatch) {
  FastPath fast;
  std::mt19937 rng(13);
  const int m = 37, k = 768 + 256;
  for (const auto& q : kTypes) {
    const auto W = random_matrix(q, m, k, rng, true);
    const TensorView Wv = view(q, W, m, k);
    const auto bias = normal(m, rng);
    const auto X = normal(size_t(64) * k, rng);
    std::vector<float> all(size_t(64) * m);
    cpu::linear(X.data(), 64, Wv, bias.data(), all.data());
    for (int n = 1; n <= 64; ++n)
      for (int first : {0, (64 - n) / 2, 64 - n}) {
        std::vector<float> part(size_t(n) * m);
        cpu::linear(X.data() + size_t(first) * k, n, Wv, bias.data(), part.data());
        ASSERT_EQ(0, std::memcmp(part.data(), all.data() + size_t(first) * m, part.size() * sizeof(float)))
            << dtype_name(q.dtype) << " n " << n << " first " << first;
      }
  }
}

// Three products of k inputs on the fast path, of different types (Q4_K_M files mix Q4_K and Q6_K), the second
// without a bias: what the one-fork calls below are checked on.
struct MixedProducts {
  static constexpr int k = 512;
  std::vector<std::pair<TypeCase, int>> parts = {{kTypes[2], 601}, {kTypes[4], 64}, {kTypes[0], 130}};
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<TensorView> views;
  std::vector<std::vector<float>> biases;
  explicit MixedProducts(std::mt19937& rng) {
    for (const auto& [q, m] : parts) {
      bytes.push_back(random_matrix(q, m, k, rng, false));
      biases.push_back(normal(size_t(m), rng));
    }
    for (size_t i = 0; i < parts.size(); ++i) views.push_back(view(parts[i].first, bytes[i], parts[i].second, k));
  }
  const float* bias(size_t i) const { return i == 1 ? nullptr : biases[i].data(); }
};

// A layer's q/k/v (or gate/up) through linear_shared_input: X quantized once and one fork for all the products, even
// when their types differ, and every output the bits a lone linear() gives it.
TEST(QuantInt8, SharedInputProductsForkOnceAndEqualLoneCalls) {
  FastPath fast;
  std::mt19937 rng(23);
  const MixedProducts p(rng);
  const int k = MixedProducts::k;
  const bool old_backoff = cpu::set_backoff(false);
  const int old_threads = cpu::set_num_threads(2);
  for (int n : {1, 3, 8}) {
    const auto X = normal(size_t(n) * k, rng);
    std::vector<std::vector<float>> alone(p.parts.size()), shared(p.parts.size());
    std::vector<cpu::LinearOutput> outs;
    for (size_t i = 0; i < p.parts.size(); ++i) {
      alone[i].resize(size_t(n) * p.parts[i].second);
      shared[i].resize(alone[i].size());
      cpu::linear(X.data(), n, p.views[i], p.bias(i), alone[i].data());
      outs.push_back({&p.views[i], p.bias(i), shared[i].data()});
    }
    const auto before = cpu::threading_stats();
    cpu::linear_shared_input(X.data(), n, outs);
    EXPECT_EQ(cpu::threading_stats().parallel_calls, before.parallel_calls + 1) << "one fork for all, n " << n;
    for (size_t i = 0; i < p.parts.size(); ++i)
      ASSERT_EQ(0, std::memcmp(alone[i].data(), shared[i].data(), alone[i].size() * sizeof(float)))
          << dtype_name(p.parts[i].first.dtype) << " n " << n;
  }
  cpu::set_num_threads(old_threads);
  cpu::set_backoff(old_backoff);
}

// A decode step's experts' down products through linear_each: each product its own X, one fork for all, and every
// output the bits a lone linear() gives it; on the exact path, one call each (the same bits as those calls).
TEST(QuantInt8, EachOwnInputProductsForkOnceAndEqualLoneCalls) {
  std::mt19937 rng(29);
  const MixedProducts p(rng);
  const int k = MixedProducts::k;
  const bool old_backoff = cpu::set_backoff(false);
  const int old_threads = cpu::set_num_threads(2);
  for (bool exact : {false, true}) {
    const bool old_exact = cpu::set_quant_exact(exact);
    for (int n : {1, 3}) {
      std::vector<std::vector<float>> X(p.parts.size()), alone(p.parts.size()), each(p.parts.size());
      std::vector<cpu::LinearInput> ins;
      for (size_t i = 0; i < p.parts.size(); ++i) {
        X[i] = normal(size_t(n) * k, rng);
        alone[i].resize(size_t(n) * p.parts[i].second);
        each[i].resize(alone[i].size());
        cpu::linear(X[i].data(), n, p.views[i], p.bias(i), alone[i].data());
        ins.push_back({X[i].data(), &p.views[i], p.bias(i), each[i].data()});
      }
      const auto before = cpu::threading_stats();
      cpu::linear_each(n, ins);
      if (!exact) EXPECT_EQ(cpu::threading_stats().parallel_calls, before.parallel_calls + 1) << "one fork, n " << n;
      for (size_t i = 0; i < p.parts.size(); ++i)
        ASSERT_EQ(0, std::memcmp(alone[i].data(), each[i].data(), alone[i].size() * sizeof(float)))
            << dtype_name(p.parts[i].first.dtype) << " n " << n << (exact ? " exact" : "");
    }
    cpu::set_quant_exact(old_exact);
  }
  cpu::set_num_threads(old_threads);
  cpu::set_backoff(old_backoff);
}

// Products of different widths, each with its own X (a decode step's routed experts' down products, 1408 wide in
// Qwen1.5-MoE, beside its shared expert's, 5632): still one fork, each output the bits a lone linear() gives.
TEST(QuantInt8, EachOwnInputProductsOfDifferentWidthsForkOnce) {
  FastPath fast;
  std::mt19937 rng(31);
  const bool old_backoff = cpu::set_backoff(false);
  const int old_threads = cpu::set_num_threads(2);
  struct Part {
    const TypeCase& q;
    int m, k;
  };
  // 393k multiply-adds a token: past the least that forks (kMinParallelMacs, 262k).
  const Part parts[] = {{kTypes[1], 384, 256}, {kTypes[1], 256, 256}, {kTypes[2], 160, 1024}, {kTypes[0], 129, 512}};
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<TensorView> views;
  for (const Part& part : parts) bytes.push_back(random_matrix(part.q, part.m, part.k, rng, false));
  for (size_t i = 0; i < bytes.size(); ++i) views.push_back(view(parts[i].q, bytes[i], parts[i].m, parts[i].k));
  for (int n : {1, 3}) {
    std::vector<std::vector<float>> X, alone, each;
    std::vector<cpu::LinearInput> ins;
    for (size_t i = 0; i < views.size(); ++i) {
      X.push_back(normal(size_t(n) * size_t(parts[i].k), rng));
      alone.emplace_back(size_t(n) * size_t(parts[i].m));
      each.emplace_back(alone.back().size(), -1.f);
      cpu::linear(X[i].data(), n, views[i], nullptr, alone[i].data());
    }
    for (size_t i = 0; i < views.size(); ++i) ins.push_back({X[i].data(), &views[i], nullptr, each[i].data()});
    const auto before = cpu::threading_stats();
    cpu::linear_each(n, ins);
    EXPECT_EQ(cpu::threading_stats().parallel_calls, before.parallel_calls + 1) << "one fork, n " << n;
    for (size_t i = 0; i < views.size(); ++i)
      ASSERT_EQ(0, std::memcmp(alone[i].data(), each[i].data(), alone[i].size() * sizeof(float)))
          << "product " << i << " (k " << parts[i].k << "), n " << n;
  }
  cpu::set_num_threads(old_threads);
  cpu::set_backoff(old_backoff);
}

// The thread cap holds and the split of rows over threads changes no bit (as MatmulQuant's test of the exact path).
TEST(QuantInt8, ThreadCapHoldsAndThreadCountDoesNotChangeResults) {
  FastPath fast;
  std::mt19937 rng(17);
  const int m = 613, k = 512;
  const bool old_backoff = cpu::set_backoff(false);
  const int old_threads = cpu::set_num_threads(1);
  for (const auto& q : kTypes) {
    SCOPED_TRACE(dtype_name(q.dtype));
    const auto W = random_matrix(q, m, k, rng, false);
    const TensorView Wv = view(q, W, m, k);
    const auto bias = normal(m, rng);
    for (int n : {1, 3, 9, 64}) {
      const auto X = normal(size_t(n) * k, rng);
      std::vector<float> one(size_t(n) * m), many(size_t(n) * m);
      cpu::set_num_threads(1);
      auto before = cpu::threading_stats();
      cpu::linear(X.data(), n, Wv, bias.data(), one.data());
      ASSERT_EQ(cpu::threading_stats().parallel_calls, before.parallel_calls) << "forked with a cap of 1, n " << n;
      for (int threads : {2, 3}) {
        cpu::set_num_threads(threads);
        before = cpu::threading_stats();
        cpu::linear(X.data(), n, Wv, bias.data(), many.data());
        ASSERT_EQ(cpu::threading_stats().parallel_calls, before.parallel_calls + 1) << "did not fork, n " << n;
        ASSERT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float))) << "n " << n << " threads " << threads;
      }
    }
  }
  cpu::set_num_threads(old_threads);
  cpu::set_backoff(old_backoff);
}

// set_quant_exact(true) gives the exact path (the dequantized model's products to f32 rounding); the default path
// really is the other one (its activation rounding shows), and non-finite activations give NaN, not a number.
TEST(QuantInt8, ExactSwitchSelectsTheExactPath) {
  std::mt19937 rng(19);
  const int m = 16, k = 512, n = 4;
  for (const auto& q : kTypes) {
    const auto W = random_matrix(q, m, k, rng, false);
    const TensorView Wv = view(q, W, m, k);
    auto X = normal(size_t(n) * k, rng);
    std::vector<float> Y(size_t(n) * m), R(size_t(n) * m);
    cpu::linear_reference(X.data(), n, Wv, nullptr, R.data());
    const bool old = cpu::set_quant_exact(true);
    EXPECT_TRUE(cpu::quant_exact());
    cpu::linear(X.data(), n, Wv, nullptr, Y.data());
    double worst_exact = 0, worst_fast = 0, scale = 1;
    for (float r : R) scale = std::max(scale, double(std::fabs(r)));
    for (size_t i = 0; i < Y.size(); ++i) worst_exact = std::max(worst_exact, double(std::fabs(Y[i] - R[i])));
    EXPECT_TRUE(cpu::set_quant_exact(false));
    cpu::linear(X.data(), n, Wv, nullptr, Y.data());
    for (size_t i = 0; i < Y.size(); ++i) worst_fast = std::max(worst_fast, double(std::fabs(Y[i] - R[i])));
    EXPECT_LT(worst_exact, 1e-5 * scale) << dtype_name(q.dtype);
    EXPECT_GT(worst_fast, worst_exact) << dtype_name(q.dtype);
    X[5] = std::numeric_limits<float>::infinity();
    cpu::linear(X.data(), 1, Wv, nullptr, Y.data());
    for (int r = 0; r < m; ++r) EXPECT_TRUE(std::isnan(Y[r])) << dtype_name(q.dtype) << " row " << r;
    cpu::set_quant_exact(old);
  }
}

}  // namespace
}  // namespace specscope
