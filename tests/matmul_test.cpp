// linear() against linear_reference() for every kernel family this CPU runs (scalar, AVX2, AVX-512), both
// the tiled path and the OpenBLAS path, every weight type, many token counts and odd shapes; plus exact
// brute-force checks of the f16/bf16 scalar conversions in engine/util/dtype.*.
#include <gtest/gtest.h>
#include <immintrin.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/cpu/bf16_panels.h"
#include "engine/cpu/matmul.h"
#include "engine/cpu/matmul_kernels.h"
#include "engine/util/dtype.h"
#include "engine/util/widen.h"
#include "engine/util/error.h"
#include "engine/util/tensor.h"

using namespace specscope;

namespace {

// The kernels' own checks run on the exact path (f32 activations); the bf16 fast path has its tests below.
const bool kExactPath = (cpu::set_quant_exact(true), true);

// ---------------------------------------------------------------------------------------------------------
// Scalar conversions (engine/util/dtype.*)

// The value of a half, computed independently of the code under test (in double, from the definition).
double half_value(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 0) v = std::ldexp(double(m), -24);
  else if (e == 31) v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else v = std::ldexp(double(1024 + m), e - 25);
  return s ? -v : v;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

TEST(DTypeConversion, F16ToF32AllValues) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(uint16_t(h));
    const double want = half_value(uint16_t(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << h;
      // Payload and sign are kept: sign | all-ones exponent | mantissa << 13.
      ASSERT_EQ(bits(f), ((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13)) << h;
    } else {
      ASSERT_EQ(double(f), want) << h;
      ASSERT_EQ(std::signbit(f), bool(h & 0x8000)) << h;  // -0 stays -0
    }
  }
}

TEST(DTypeConversion, F32ToF16RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t back = f32_to_f16(f16_to_f32(uint16_t(h)));
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) {
      EXPECT_EQ(back & 0x7c00u, 0x7c00u) << h;  // NaN stays NaN, with its sign
      EXPECT_NE(back & 0x3ffu, 0u) << h;
      EXPECT_EQ(back & 0x8000u, h & 0x8000u) << h;
    } else {
      ASSERT_EQ(back, h) << h;
    }
  }
}

// Every rounding boundary: the midpoint between each pair of neighbouring halves goes to the even one, and
// the f32 values just either side of it go to the nearer one; both signs, subnormals and overflow included.
TEST(DTypeConversion, F32ToF16RoundsToNearestEvenAtEveryMidpoint) {
  for (uint32_t h = 0; h < 0x7c00u; ++h) {  // every finite non-negative half below the largest
    const double lo = half_value(uint16_t(h));
    const double hi = h + 1 == 0x7c00u ? 65536.0 : half_value(uint16_t(h + 1));  // rounding treats inf as 2^16
    const float mid = float((lo + hi) / 2);
    ASSERT_EQ(double(mid), (lo + hi) / 2) << "midpoint not exact in f32";
    for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) {
      const float sm = sign ? -mid : mid;
      const uint16_t even = (h & 1) ? uint16_t(h + 1) : uint16_t(h);
      ASSERT_EQ(f32_to_f16(sm), uint16_t(even | sign)) << h;
      ASSERT_EQ(f32_to_f16(std::nextafter(sm, 0.f)), uint16_t(h | sign)) << h;
      ASSERT_EQ(f32_to_f16(std::nextafter(sm, sign ? -INFINITY : INFINITY)), uint16_t((h + 1) | sign)) << h;
      ASSERT_EQ(f32_to_f16(sign ? -float(lo) : float(lo)), uint16_t(h | sign)) << h;
    }
  }
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7c00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xfc00);
  EXPECT_EQ(f32_to_f16(1e30f), 0x7c00);
  EXPECT_EQ(f32_to_f16(-0.f), 0x8000);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::denorm_min()), 0x8000);
  const uint16_t qnan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE((qnan & 0x7c00) == 0x7c00 && (qnan & 0x3ff));
  const uint16_t snan = f32_to_f16(std::bit_cast<float>(0x7f800001u));  // payload only in the low bits
  EXPECT_TRUE((snan & 0x7c00) == 0x7c00 && (snan & 0x3ff)) << "NaN must not become inf";
}

__attribute__((target("f16c"))) uint16_t f32_to_f16_hw(float f) {
  return uint16_t(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}

// Against the F16C instruction on random f32 bit patterns and on a sweep over every exponent.
TEST(DTypeConversion, F32ToF16MatchesF16C) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C";
  std::mt19937 rng(7);
  auto check = [](uint32_t u) {
    const float f = std::bit_cast<float>(u);
    const uint16_t got = f32_to_f16(f), hw = f32_to_f16_hw(f);
    if (std::isnan(f))
      ASSERT_TRUE((got & 0x7c00) == 0x7c00 && (got & 0x3ff) && (got & 0x8000) == (hw & 0x8000)) << u;
    else
      ASSERT_EQ(got, hw) << std::hex << u;
  };
  for (int i = 0; i < 1 << 21; ++i) check(rng());
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t j = 0; j < 4096; ++j) check((e << 23) | (rng() & 0x807fffffu));
}

TEST(DTypeConversion, Bf16AllValues) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(uint16_t(h));
    ASSERT_EQ(bits(f), h << 16);
    const uint16_t back = f32_to_bf16(f);
    if (std::isnan(f))
      ASSERT_TRUE(std::isnan(bf16_to_f32(back)) && (back & 0x8000) == (h & 0x8000)) << h;
    else
      ASSERT_EQ(back, h) << h;
  }
  // Midpoints: ties to even; one ulp either side goes to the nearer neighbour. Covers subnormals and the
  // overflow to inf past the largest finite bf16.
  for (uint32_t h = 0; h < 0x7f80u; ++h) {
    const uint32_t mid = (h << 16) | 0x8000u;
    const uint16_t even = (h & 1) ? uint16_t(h + 1) : uint16_t(h);
    ASSERT_EQ(f32_to_bf16(std::bit_cast<float>(mid)), even) << h;
    ASSERT_EQ(f32_to_bf16(std::bit_cast<float>(mid - 1)), h) << h;
    ASSERT_EQ(f32_to_bf16(std::bit_cast<float>(mid + 1)), h + 1) << h;
    ASSERT_EQ(f32_to_bf16(std::bit_cast<float>(mid | 0x80000000u)), even | 0x8000u) << h;
  }
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::bit_cast<float>(0x7f800001u)))));
}

// ---------------------------------------------------------------------------------------------------------
// linear()

struct Weights {
  DType dtype;
  int m, k;
  std::vector<float> f32;      // the exact values, as f32
  std::vector<uint16_t> half;  // storage for f16/bf16
  TensorView view() const {
    TensorView v;
    v.name = "test.weight";
    v.dtype = dtype;
    v.shape = {m, k};
    v.data = dtype == DType::F32 ? static_cast<const void*>(f32.data()) : static_cast<const void*>(half.data());
    return v;
  }
};

// Random weights representable exactly in `t` (so the reference and the kernels see the same values).
Weights make_weights(DType t, int m, int k, std::mt19937& rng, bool integers) {
  Weights w{t, m, k, {}, {}};
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::uniform_int_distribution<int> ints(-4, 4);
  w.f32.resize(size_t(m) * k);
  w.half.resize(size_t(m) * k);
  for (size_t i = 0; i < w.f32.size(); ++i) {
    float v = integers ? float(ints(rng)) : uni(rng);
    if (t == DType::F16) {
      w.half[i] = f32_to_f16(v);
      v = f16_to_f32(w.half[i]);
    } else if (t == DType::BF16) {
      w.half[i] = f32_to_bf16(v);
      v = bf16_to_f32(w.half[i]);
    }
    w.f32[i] = v;
  }
  return w;
}

std::vector<float> random_vec(size_t n, std::mt19937& rng, bool integers) {
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::uniform_int_distribution<int> ints(-4, 4);
  std::vector<float> v(n);
  for (auto& x : v) x = integers ? float(ints(rng)) : uni(rng);
  return v;
}

// Worst-case bound for an f32 dot product of length k summed in any order (with or without FMA), plus the
// bias add, plus the reference's own final rounding: (k + 2) u (sum |x_i w_i| + |b|) with u = 2^-24, and a
// little slack for the gamma_k = ku / (1 - ku) denominator.
constexpr double kUnit = 1.0 / (1 << 24);

std::string dtype_str(DType t) { return std::string(dtype_name(t)); }

struct Path {
  cpu::Isa isa;
  bool blas;  // force the OpenBLAS path (else force the tiled path)
};

const char* isa_str(cpu::Isa i) {
  switch (i) {
    case cpu::Isa::Scalar: return "scalar";
    case cpu::Isa::Avx2: return "avx2";
    case cpu::Isa::Avx512: return "avx512";
    default: return "auto";
  }
}

class LinearTest : public ::testing::TestWithParam<std::tuple<cpu::Isa, bool, DType>> {
 protected:
  void SetUp() override {
    const auto isa = std::get<0>(GetParam());
    if (!cpu::isa_supported(isa)) GTEST_SKIP() << isa_str(isa) << " not supported on this CPU";
    ASSERT_EQ(cpu::set_isa(isa), isa);
    old_blas_ = cpu::set_blas_min_tokens(std::get<1>(GetParam()) ? 1 : INT_MAX);
  }
  void TearDown() override {
    cpu::set_isa(cpu::Isa::Auto);
    cpu::set_blas_min_tokens(old_blas_);
  }
  int old_blas_ = 0;
};

const int kTokenCounts[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 257};
// (m, k): tiny, k below / around / off the 8- and 16-wide vectors, m not a multiple of 4, and biggish ones
// large enough to be split over threads.
const std::pair<int, int> kShapes[] = {{1, 1},   {3, 5},    {7, 17},   {4, 16},    {13, 40},
                                       {37, 100}, {67, 129}, {130, 515}, {301, 1031}};

// Every kernel path this CPU can run: each instruction set with the tiled kernels and with the OpenBLAS
// path forced, plus the default dispatch (best ISA, default BLAS crossover).
struct PathSel {
  cpu::Isa isa;
  int blas_min;  // 1: always OpenBLAS, INT_MAX: never, 0: default
  std::string name() const {
    return std::string(isa_str(isa)) + (blas_min == 1 ? "/blas" : blas_min == INT_MAX ? "/tiled" : "/default");
  }
};
std::vector<PathSel> all_paths() {
  std::vector<PathSel> out = {{cpu::Isa::Auto, 0}};
  for (auto isa : {cpu::Isa::Scalar, cpu::Isa::Avx2, cpu::Isa::Avx512})
    if (cpu::isa_supported(isa))
      for (int b : {INT_MAX, 1}) out.push_back({isa, b});
  return out;
}
// Selects a path for its lifetime. The bulk comparisons run the tiled kernels on one thread: results do
// not depend on the thread count (checked bit for bit by ThreadCountDoesNotChangeResults), and on a
// loaded machine every fork/join waits for the other thread to be scheduled, which made this suite slow.
struct UsePath {
  explicit UsePath(const PathSel& p, int threads = 1) {
    cpu::set_isa(p.isa);
    old = cpu::set_blas_min_tokens(p.blas_min);
    old_threads = cpu::set_num_threads(threads);
    old_backoff = cpu::set_backoff(false);  // really use `threads` threads, however busy the machine is
  }
  ~UsePath() {
    cpu::set_isa(cpu::Isa::Auto);
    cpu::set_blas_min_tokens(old);
    cpu::set_num_threads(old_threads);
    cpu::set_backoff(old_backoff);
  }
  int old, old_threads;
  bool old_backoff;
};

class LinearVsReference : public ::testing::TestWithParam<DType> {};

// Random real data against the reference, within the worst-case f32 bound, on every path.
TEST_P(LinearVsReference, WithinF32Bound) {
  const DType t = GetParam();
  const auto paths = all_paths();
  std::mt19937 rng(1234);
  double worst = 0;  // largest err / bound seen, reported
  for (auto [m, k] : kShapes) {
    const Weights w = make_weights(t, m, k, rng, false);
    const TensorView W = w.view();
    const std::vector<float> bias = random_vec(size_t(m), rng, false);
    for (int n : kTokenCounts) {
      if (size_t(n) * m * k > size_t(4) << 20 && n > 4) continue;  // keep the suite fast
      const std::vector<float> X = random_vec(size_t(n) * k, rng, false);
      for (bool with_bias : {false, true}) {
        const float* b = with_bias ? bias.data() : nullptr;
        std::vector<float> ref(size_t(n) * m), bound(size_t(n) * m);
        cpu::linear_reference(X.data(), n, W, b, ref.data());
        for (int ti = 0; ti < n; ++ti)
          for (int r = 0; r < m; ++r) {
            double mag = b ? std::fabs(b[r]) : 0.0;
            for (int i = 0; i < k; ++i) mag += std::fabs(double(X[size_t(ti) * k + i]) * w.f32[size_t(r) * k + i]);
            bound[size_t(ti) * m + r] = float((k + 2) * kUnit * 1.001 * mag + 1e-30);
          }
        for (const auto& path : paths) {
          UsePath use(path);
          std::vector<float> got(size_t(n) * m + 7, -12345.f);
          cpu::linear(X.data(), n, W, b, got.data());
          for (int i = 0; i < 7; ++i) ASSERT_EQ(got[size_t(n) * m + i], -12345.f) << path.name() << ": wrote past Y";
          for (size_t idx = 0; idx < ref.size(); ++idx) {
            const double err = std::fabs(double(got[idx]) - double(ref[idx]));
            worst = std::max(worst, err / bound[idx]);
            ASSERT_LE(err, bound[idx]) << path.name() << " " << dtype_str(t) << " m=" << m << " k=" << k << " n=" << n
                                       << " bias=" << with_bias << " token " << idx / m << " row " << idx % m
                                       << ": got " << got[idx] << " want " << ref[idx];
          }
        }
      }
    }
  }
  RecordProperty("worst_err_over_bound", std::to_string(worst));
}

// Small integers: every partial sum is an integer below 2^24, so f32 accumulation in any order is exact and
// every path must equal the reference bit for bit. Catches a dropped, doubled or misplaced term of any size.
TEST_P(LinearVsReference, ExactOnIntegerData) {
  const DType t = GetParam();
  const auto paths = all_paths();
  std::mt19937 rng(99);
  for (auto [m, k] : kShapes) {
    const Weights w = make_weights(t, m, k, rng, true);
    const TensorView W = w.view();
    const std::vector<float> bias = random_vec(size_t(m), rng, true);
    for (int n : {1, 2, 3, 5, 6, 7, 9, 12, 13, 33, 100}) {
      if (size_t(n) * m * k > size_t(4) << 20 && n > 13) continue;
      const std::vector<float> X = random_vec(size_t(n) * k, rng, true);
      for (bool with_bias : {false, true}) {
        const float* b = with_bias ? bias.data() : nullptr;
        std::vector<float> ref(size_t(n) * m);
        cpu::linear_reference(X.data(), n, W, b, ref.data());
        for (const auto& path : paths) {
          UsePath use(path);
          std::vector<float> got(size_t(n) * m);
          cpu::linear(X.data(), n, W, b, got.data());
          for (size_t i = 0; i < ref.size(); ++i)
            ASSERT_EQ(got[i], ref[i]) << path.name() << " " << dtype_str(t) << " m=" << m << " k=" << k << " n=" << n
                                      << " at " << i;
        }
      }
    }
  }
}

// The thread split (contiguous row ranges) must not change a single bit of the result, on every path.
TEST_P(LinearVsReference, ThreadCountDoesNotChangeResults) {
  const DType t = GetParam();
  std::mt19937 rng(77);
  for (auto [m, k] : {std::pair{301, 1031}, std::pair{130, 515}, std::pair{67, 129}, std::pair{1000, 64}}) {
    const Weights w = make_weights(t, m, k, rng, false);
    const std::vector<float> bias = random_vec(size_t(m), rng, false);
    for (int n : {1, 3, 8, 13, 40}) {
      const std::vector<float> X = random_vec(size_t(n) * k, rng, false);
      for (const auto& path : all_paths()) {
        std::vector<float> one(size_t(n) * m), many(size_t(n) * m);
        {
          UsePath use(path, 1);
          cpu::linear(X.data(), n, w.view(), bias.data(), one.data());
        }
        for (int threads : {2, 3}) {
          UsePath use(path, threads);
          const auto before = cpu::threading_stats();
          cpu::linear(X.data(), n, w.view(), bias.data(), many.data());
          if (size_t(n) * m * k >= (size_t(1) << 18))  // big enough to be split (kMinParallelMacs = 2^17)
            ASSERT_EQ(cpu::threading_stats().parallel_calls, before.parallel_calls + 1) << "did not run threaded";
          ASSERT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float)))
              << path.name() << " " << dtype_str(t) << " m=" << m << " k=" << k << " n=" << n << " threads=" << threads;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, LinearVsReference, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return dtype_str(info.param); });

// W and X end exactly at a page that may not be read (as the last tensor of a memory-mapped file can):
// no kernel may load past the last element, even in its vector tails.
TEST_P(LinearTest, NoReadsPastTheEndOfWOrX) {
  const DType t = std::get<2>(GetParam());
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  auto guarded = [&](size_t bytes) {
    const size_t span = (bytes + page - 1) / page * page;
    char* base = static_cast<char*>(mmap(nullptr, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(base, MAP_FAILED);
    EXPECT_EQ(mprotect(base + span, page, PROT_NONE), 0);
    return std::make_pair(base, base + span - bytes);  // (mapping, data start)
  };
  std::mt19937 rng(5);
  for (auto [m, k] : {std::pair{5, 3}, std::pair{9, 33}, std::pair{6, 47}}) {
    for (int n : {1, 4, 7, 13}) {
      const Weights w = make_weights(t, m, k, rng, false);
      const size_t wbytes = size_t(m) * k * dtype_size(t);
      auto [wmap, wdata] = guarded(wbytes);
      std::memcpy(wdata, t == DType::F32 ? static_cast<const void*>(w.f32.data()) : w.half.data(), wbytes);
      TensorView W = w.view();
      W.data = wdata;
      const std::vector<float> x = random_vec(size_t(n) * k, rng, false);
      auto [xmap, xdata] = guarded(x.size() * 4);
      std::memcpy(xdata, x.data(), x.size() * 4);
      std::vector<float> ref(size_t(n) * m), got(size_t(n) * m);
      cpu::linear_reference(x.data(), n, W, nullptr, ref.data());
      cpu::linear(reinterpret_cast<const float*>(xdata), n, W, nullptr, got.data());
      for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(got[i], ref[i], 1e-5 * (k + 1));
      if (t == DType::BF16) {  // the vdpbf16ps path reads its own rounded copy of X, and W with masked tails
        const bool old = cpu::set_quant_exact(false);
        cpu::linear(reinterpret_cast<const float*>(xdata), n, W, nullptr, got.data());
        cpu::set_quant_exact(old);
        for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(got[i], ref[i], 1e-2 * (k + 1));
      }
      std::vector<float> row(static_cast<size_t>(k));
      cpu::embedding_row(W, m - 1, row.data());
      for (int i = 0; i < k; ++i) ASSERT_EQ(row[size_t(i)], w.f32[size_t(m - 1) * k + i]);
      munmap(wmap, (wbytes + page - 1) / page * page + page);
      munmap(xmap, (x.size() * 4 + page - 1) / page * page + page);
    }
  }
}

TEST_P(LinearTest, EmbeddingRowAndConvert) {
  const DType t = std::get<2>(GetParam());
  std::mt19937 rng(11);
  for (int h : {1, 7, 16, 33, 1000}) {
    const Weights e = make_weights(t, 5, h, rng, false);
    std::vector<float> out(size_t(h) + 1, 777.f);
    for (int r = 0; r < 5; ++r) {
      cpu::embedding_row(e.view(), r, out.data());
      for (int i = 0; i < h; ++i) ASSERT_EQ(out[size_t(i)], e.f32[size_t(r) * h + i]);
      ASSERT_EQ(out[size_t(h)], 777.f);
    }
  }
  // Every f16/bf16 bit pattern through the vector conversion: identical bits to the scalar one (NaNs: NaN).
  if (t != DType::F32) {
    std::vector<uint16_t> all(65536);
    for (uint32_t i = 0; i < 65536; ++i) all[i] = uint16_t(i);
    // And the portable widening (engine/util/widen.h) the scalar kernels, LoRA merges and fuzz targets use.
    std::vector<float> out(65536), portable(65536);
    cpu::convert_to_f32(t, all.data(), out.data(), all.size());
    widen_to_f32(t, all.data(), portable.data(), all.size());
    for (uint32_t i = 0; i < 65536; ++i) {
      const float want = t == DType::F16 ? f16_to_f32(uint16_t(i)) : bf16_to_f32(uint16_t(i));
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(out[i])) << i;
        ASSERT_TRUE(std::isnan(portable[i])) << i;
      } else {
        ASSERT_EQ(bits(out[i]), bits(want)) << i;
        ASSERT_EQ(bits(portable[i]), bits(want)) << i;
      }
    }
  }
}

// Several threads calling linear() at once (e.g. one per sequence lane): same results, no shared scratch.
TEST_P(LinearTest, ConcurrentCallsFromThreads) {
  const DType t = std::get<2>(GetParam());
  std::mt19937 rng(3);
  const int m = 203, k = 301, n = 9;
  const Weights w = make_weights(t, m, k, rng, true);
  const std::vector<float> X = random_vec(size_t(n) * k, rng, true);
  std::vector<float> ref(size_t(n) * m);
  cpu::linear_reference(X.data(), n, w.view(), nullptr, ref.data());
  std::vector<std::vector<float>> got(3, std::vector<float>(size_t(n) * m));
  std::vector<std::thread> threads;
  // Concurrent calls into OpenBLAS (pthreads build) serialize on its locks and take ~15 ms each here.
  const int reps = std::get<1>(GetParam()) ? 2 : 20;
  for (auto& g : got)
    threads.emplace_back([&w, &X, &g, reps] {
      for (int rep = 0; rep < reps; ++rep) cpu::linear(X.data(), n, w.view(), nullptr, g.data());
    });
  for (auto& th : threads) th.join();
  for (auto& g : got) EXPECT_EQ(g, ref);
}

INSTANTIATE_TEST_SUITE_P(
    AllPaths, LinearTest,
    ::testing::Combine(::testing::Values(cpu::Isa::Scalar, cpu::Isa::Avx2, cpu::Isa::Avx512), ::testing::Bool(),
                       ::testing::Values(DType::F32, DType::F16, DType::BF16)),
    [](const auto& info) {
      return std::string(isa_str(std::get<0>(info.param))) + (std::get<1>(info.param) ? "_blas_" : "_tiled_") +
             dtype_str(std::get<2>(info.param));
    });

TEST(Linear, DefaultDispatchIsTheBestSupported) {
  cpu::set_isa(cpu::Isa::Auto);
  const std::string isa = cpu::active_isa();
  if (cpu::isa_supported(cpu::Isa::Avx512)) EXPECT_EQ(isa, "avx512");
  else if (cpu::isa_supported(cpu::Isa::Avx2)) EXPECT_EQ(isa, "avx2");
  else EXPECT_EQ(isa, "scalar");
}

TEST(Linear, EdgeCasesAndErrors) {
  std::vector<float> w(6, 1.f), x(3, 2.f), bias = {0.5f, -1.f}, y(2, 9.f);
  TensorView W;
  W.name = "edge.weight";
  W.dtype = DType::F32;
  W.shape = {2, 3};
  W.data = w.data();
  cpu::linear(x.data(), 0, W, nullptr, y.data());  // n = 0: nothing written
  EXPECT_EQ(y, (std::vector<float>{9.f, 9.f}));
  cpu::linear(x.data(), 1, W, bias.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{6.5f, 5.f}));
  TensorView W0 = W;  // k = 0: the bias (or zeros)
  W0.shape = {2, 0};
  cpu::linear(x.data(), 1, W0, bias.data(), y.data());
  EXPECT_EQ(y, bias);
  cpu::linear(x.data(), 1, W0, nullptr, y.data());
  EXPECT_EQ(y, (std::vector<float>{0.f, 0.f}));

  TensorView bad = W;
  bad.shape = {6};
  EXPECT_THROW(cpu::linear(x.data(), 1, bad, nullptr, y.data()), InputError);
  bad = W;
  bad.dtype = DType::I32;
  EXPECT_THROW(cpu::linear(x.data(), 1, bad, nullptr, y.data()), InputError);
  EXPECT_THROW(cpu::embedding_row(W, 2, y.data()), InputError);
  EXPECT_THROW(cpu::embedding_row(W, -1, y.data()), InputError);
}

// NaN and inf in the inputs reach exactly the outputs they should (no lane of another token or row).
TEST(Linear, NonFiniteValuesStayInTheirOutputs) {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    std::mt19937 rng(8);
    const int m = 10, k = 37, n = 11;
    Weights w = make_weights(t, m, k, rng, false);
    std::vector<float> X = random_vec(size_t(n) * k, rng, false);
    X[size_t(4) * k + 36] = NAN;  // token 4, last element (a vector tail)
    std::vector<float> got(size_t(n) * m);
    for (int blas : {0, 1}) {
      const int old = cpu::set_blas_min_tokens(blas ? 1 : INT_MAX);
      cpu::linear(X.data(), n, w.view(), nullptr, got.data());
      cpu::set_blas_min_tokens(old);
      for (int ti = 0; ti < n; ++ti)
        for (int r = 0; r < m; ++r)
          ASSERT_EQ(std::isnan(got[size_t(ti) * m + r]), ti == 4) << dtype_str(t) << " blas " << blas;
    }
  }
}

}  // namespace

// The bf16 fast path (AVX512-BF16 CPUs; on AVX2 ones the widening panels, on others the exact path: both meet the
// same checks, and Bf16WideningPanels holds the AVX2 kernel to a tighter bound): within its stated
// bound (matmul.h: activations rounded to bf16, so |fast - exact| <= 2^-8 sum|w x| plus f32 summation), and each
// token's outputs bit-identical whether computed alone or among other tokens, in any tile position.
TEST(Bf16FastPath, WithinStatedBoundAndBatchInvariant) {
  const bool old = cpu::set_quant_exact(false);
  // On CPUs with AMX-BF16 the tiles (matmul_amx.cpp: panels of whole 16-pair tiles, here k = 31, 32, 384, 2048 and
  // 4096) and, with them turned off, the vdpbf16ps kernel; elsewhere set_amx changes nothing and the loop repeats.
  for (bool amx : {true, false}) {
    cpu::set_amx(amx);
    std::printf("bf16 path: %s\n", cpu::linear_roofline_path(DType::BF16));
    std::mt19937 rng(17);
    // Row-major weights (a view without an owner stays row-major) and panel-packed ones (an owned view narrower than
    // kPanelMaxK is packed on first use, bf16_panels.h), with partial panels, odd k and a bias; k = 2081 stays
    // row-major and takes the one-row kernel at n = 1 (matmul_bf16dot.cpp).
    for (bool owned : {false, true})
      for (auto [m, k] : {std::pair{4, 3}, std::pair{13, 31}, std::pair{9, 32}, std::pair{7, 33}, std::pair{64, 384},
                          std::pair{21, 1000}, std::pair{50, 385}, std::pair{37, 2081}, std::pair{19, 2048},
                          std::pair{33, 4096}}) {
        auto w = std::make_shared<Weights>(make_weights(DType::BF16, m, k, rng, false));
        TensorView W = w->view();
        if (owned) W.keep_alive = w;
        if (owned && k < cpu::detail::kPanelMaxK && std::string(cpu::linear_roofline_path(DType::BF16)) != "f32 fma")
          EXPECT_NE(cpu::detail::bf16_panels_for(W), nullptr) << "m=" << m << " k=" << k;
        // k = 2048 and 4096 are packed only for the tiles (their panels long enough to be prefetched); k = 2081 never.
        if (k >= cpu::detail::kPanelMaxK)
          EXPECT_EQ(cpu::bf16_weights_repacked(k),
                    k != 2081 && std::string(cpu::linear_roofline_path(DType::BF16)) == "bf16 amx")
              << "k=" << k;
        const std::vector<float> bias = owned ? random_vec(size_t(m), rng, false) : std::vector<float>{};
        const float* b = owned ? bias.data() : nullptr;
        for (int n : {1, 3, 6, 7, 8, 9, 13, 17, 64}) {
          const std::vector<float> x = random_vec(size_t(n) * k, rng, false);
          std::vector<float> got(size_t(n) * m), ref(size_t(n) * m);
          cpu::linear(x.data(), n, W, b, got.data());
          cpu::linear_reference(x.data(), n, W, b, ref.data());
          for (int t = 0; t < n; ++t)
            for (int r = 0; r < m; ++r) {
              double abs_sum = owned ? std::fabs(double(bias[size_t(r)])) : 0.0;
              for (int i = 0; i < k; ++i)
                abs_sum += std::fabs(double(w->f32[size_t(r) * k + i]) * x[size_t(t) * k + i]);
              const double bound = (std::ldexp(1.0, -8) + k * std::ldexp(1.0, -23)) * abs_sum + 1e-30;
              ASSERT_LE(std::fabs(double(got[size_t(t) * m + r]) - ref[size_t(t) * m + r]), bound)
                  << "owned=" << owned << " m=" << m << " k=" << k << " n=" << n << " t=" << t << " r=" << r;
            }
          for (int t = 0; t < n; t += std::max(1, n / 3)) {  // alone == in the batch, bit for bit
            std::vector<float> alone(static_cast<size_t>(m));
            cpu::linear(x.data() + size_t(t) * k, 1, W, b, alone.data());
            for (int r = 0; r < m; ++r)
              ASSERT_EQ(alone[size_t(r)], got[size_t(t) * m + r])
                  << "owned=" << owned << " m=" << m << " k=" << k << " n=" << n << " t=" << t;
          }
        }
      }
  }
  cpu::set_amx(true);
  cpu::set_quant_exact(old);
}

// The f16 fast path (matmul.h: activations rounded to f16 once per call, on CPUs with F16C; the scalar kernels keep
// f32): within its stated bound, |fast - exact| <= 2^-11 sum|w x| plus f32 summation; a token row holding a value f16
// cannot (|x| >= 65520) on the exact path's values, bit for bit; and each token's outputs the same bits alone (the
// one-row kernel reading the f16 bits at k >= 2048) and among other tokens (the tiles reading them widened), also when
// another token of the batch kept its f32 values.
TEST(F16FastPath, RoundsActivationsWithinStatedBoundAndStaysBatchInvariant) {
  if (std::string(cpu::active_isa()) == "scalar") GTEST_SKIP() << "no F16C: f16 weights take the exact path here";
  const bool old = cpu::set_quant_exact(false);
  std::mt19937 rng(23);
  for (auto [m, k] : {std::pair{13, 31}, std::pair{21, 1000}, std::pair{37, 2081}, std::pair{9, 8192}}) {
    const Weights w = make_weights(DType::F16, m, k, rng, false);
    for (int n : {1, 3, 7, 9}) {
      std::vector<float> x = random_vec(size_t(n) * k, rng, false);
      if (n > 1) x[size_t(n - 1) * k + size_t(k / 2)] = 70000.f;  // the last token keeps its f32 values
      std::vector<float> got(size_t(n) * m), ref(size_t(n) * m), exact(size_t(n) * m);
      cpu::linear(x.data(), n, w.view(), nullptr, got.data());
      cpu::linear_reference(x.data(), n, w.view(), nullptr, ref.data());
      cpu::set_quant_exact(true);
      cpu::linear(x.data(), n, w.view(), nullptr, exact.data());
      cpu::set_quant_exact(false);
      for (int t = 0; t < n; ++t)
        for (int r = 0; r < m; ++r) {
          double abs_sum = 0;
          for (int i = 0; i < k; ++i) abs_sum += std::fabs(double(w.f32[size_t(r) * k + i]) * x[size_t(t) * k + i]);
          const double bound = (std::ldexp(1.0, -11) + k * std::ldexp(1.0, -23)) * abs_sum + 1e-30;
          ASSERT_LE(std::fabs(double(got[size_t(t) * m + r]) - ref[size_t(t) * m + r]), bound)
              << "m=" << m << " k=" << k << " n=" << n << " t=" << t << " r=" << r;
        }
      if (n > 1)
        EXPECT_EQ(0, std::memcmp(got.data() + size_t(n - 1) * m, exact.data() + size_t(n - 1) * m, sizeof(float) * m))
            << "k=" << k << ": a row beyond f16's range is computed as on the exact path";
      for (int t = 0; t < n; ++t) {  // alone == in the batch, bit for bit
        std::vector<float> alone(static_cast<size_t>(m));
        cpu::linear(x.data() + size_t(t) * k, 1, w.view(), nullptr, alone.data());
        ASSERT_EQ(0, std::memcmp(alone.data(), got.data() + size_t(t) * m, sizeof(float) * m))
            << "m=" << m << " k=" << k << " n=" << n << " t=" << t;
      }
    }
  }
  // The rounding itself: 1 + 2^-12 is below the midpoint between f16's 1 and 1 + 2^-10, so it rounds to 1, and a row
  // of ones over k of them sums to exactly k on the fast path (the exact path keeps the 2^-12 of each).
  for (int k : {40, 4096}) {
    Weights ones{DType::F16, 1, k, std::vector<float>(size_t(k), 1.f), std::vector<uint16_t>(size_t(k), f32_to_f16(1.f))};
    const std::vector<float> x(size_t(k), 1.f + std::ldexp(1.f, -12));
    float fast = 0, exact = 0;
    cpu::linear(x.data(), 1, ones.view(), nullptr, &fast);
    cpu::set_quant_exact(true);
    cpu::linear(x.data(), 1, ones.view(), nullptr, &exact);
    cpu::set_quant_exact(false);
    EXPECT_EQ(fast, float(k)) << "k=" << k;
    EXPECT_NE(exact, float(k)) << "k=" << k;
  }
  cpu::set_quant_exact(old);
}

// The one-row kernels' prefetch setting (matmul_kernels.h: every N-th line, 0 never, -1 each kernel's default) only
// moves memory traffic: one token's outputs are the same bits under every setting and thread count, for the bf16 dot
// kernel and the f16 one, whose rows (k = 2081, 4 KB and more) take the one-row path at n = 1.
TEST(OneRowKernels, PrefetchSettingsDoNotChangeABit) {
  const bool old = cpu::set_quant_exact(false);
  std::mt19937 rng(29);
  for (DType t : {DType::BF16, DType::F16}) {
    const int m = 77, k = 2081;
    const Weights w = make_weights(t, m, k, rng, false);
    const std::vector<float> bias = random_vec(size_t(m), rng, false), x = random_vec(size_t(k), rng, false);
    std::vector<float> first;
    for (int threads : {1, 2})
      for (int lines : {-1, 0, 1, 2, 4, 7}) {
        const int old_threads = cpu::set_num_threads(threads);
        const bool old_backoff = cpu::set_backoff(false);
        cpu::detail::set_one_row_prefetch_lines(lines);
        std::vector<float> y(static_cast<size_t>(m));
        cpu::linear(x.data(), 1, w.view(), bias.data(), y.data());
        cpu::detail::set_one_row_prefetch_lines(-1);
        cpu::set_backoff(old_backoff);
        cpu::set_num_threads(old_threads);
        if (first.empty()) first = y;
        ASSERT_EQ(0, std::memcmp(first.data(), y.data(), y.size() * sizeof(float)))
            << dtype_str(t) << " threads=" << threads << " lines=" << lines;
      }
    using cpu::detail::OneRowKernel;
    EXPECT_EQ(cpu::detail::one_row_prefetch_lines(OneRowKernel::Bf16Dot),
              cpu::detail::one_row_prefetch_default(OneRowKernel::Bf16Dot));
    cpu::detail::set_one_row_prefetch_lines(0);
    EXPECT_EQ(cpu::detail::one_row_prefetch_lines(OneRowKernel::F16), 0);
    cpu::detail::set_one_row_prefetch_lines(-1);
  }
  cpu::set_quant_exact(old);
}

// The one-row kernels' prefetch defaults follow the vendor that the kernel reports in /proc/cpuinfo: every line on
// Intel, elsewhere bf16 every 4th, f16 every line, f16 bits none (matmul_kernels.h says what each measured).
TEST(OneRowPrefetch, DefaultsFollowTheVendor) {
  std::ifstream info("/proc/cpuinfo");
  std::string line, vendor;
  while (vendor.empty() && std::getline(info, line))
    if (line.rfind("vendor_id", 0) == 0) vendor = line.substr(line.find(':') + 2);
  ASSERT_FALSE(vendor.empty()) << "no vendor_id in /proc/cpuinfo";
  using cpu::detail::OneRowKernel;
  const bool intel = vendor == "GenuineIntel";
  EXPECT_EQ(cpu::detail::one_row_prefetch_default(OneRowKernel::Bf16Dot), intel ? 1 : 4) << vendor;
  EXPECT_EQ(cpu::detail::one_row_prefetch_default(OneRowKernel::F16), 1) << vendor;
  EXPECT_EQ(cpu::detail::one_row_prefetch_default(OneRowKernel::F16Bits), intel ? 1 : 0) << vendor;
}

// Panel rows only schedule the work (which rows share a cached k block); the k block sets the summation order and is a
// function of the weights alone (k_block). So forcing panel rows (bench/kernel_ab.cpp's panel=N) must not change a bit,
// for any token count, on the widening tiles of every 2- and 4-byte type.
TEST(WideningTiles, PanelRowsDoNotChangeABit) {
  const bool old = cpu::set_quant_exact(true);  // bf16 on the widening tiles, not the vdpbf16ps kernel
  std::mt19937 rng(31);
  for (DType t : {DType::F16, DType::BF16, DType::F32})
    for (int k : {2081, 8192}) {
      const int m = 45;
      const Weights w = make_weights(t, m, k, rng, false);
      const std::vector<float> bias = random_vec(size_t(m), rng, false);
      for (int n : {1, 7, 16, 33}) {
        const std::vector<float> x = random_vec(size_t(n) * k, rng, false);
        std::vector<float> first;
        for (int rows : {0, 4, 8, 20, 64}) {
          cpu::detail::set_panel_rows(rows);
          std::vector<float> y(size_t(n) * m);
          cpu::linear(x.data(), n, w.view(), bias.data(), y.data());
          cpu::detail::set_panel_rows(0);
          if (first.empty()) first = y;
          ASSERT_EQ(0, std::memcmp(first.data(), y.data(), y.size() * sizeof(float)))
              << dtype_str(t) << " k=" << k << " n=" << n << " panel rows=" << rows;
        }
      }
    }
  // The block follows the weight size: 2048 for 2-byte weights (widened in registers), 512 for f32; a k up to 1.5
  // blocks is one block.
  EXPECT_EQ(cpu::detail::k_block(8192, 2), 2048);
  EXPECT_EQ(cpu::detail::k_block(8192, 4), 512);
  EXPECT_EQ(cpu::detail::k_block(3000, 2), 3000);
  cpu::set_quant_exact(old);
}

// Several tokens' panel tiles prefetch into L1 only where it holds 48 KB (Zen 5 measured faster so, Zen 4's 32 KB
// slower); an unknown size (sysconf's 0 or -1) keeps L2.
TEST(Bf16FastPath, PanelPrefetchGoesToL1OnlyWhereTheFirstLevelCacheIsLarge) {
  EXPECT_TRUE(cpu::detail::panel_l1_suits(48 * 1024));
  EXPECT_TRUE(cpu::detail::panel_l1_suits(64 * 1024));
  EXPECT_FALSE(cpu::detail::panel_l1_suits(32 * 1024));
  EXPECT_FALSE(cpu::detail::panel_l1_suits(0));
  EXPECT_FALSE(cpu::detail::panel_l1_suits(-1));
}

// The bf16 panel tiles' prefetches (how many groups ahead, and into which cache: kernel_ab's pahead=N and pl1=0|1)
// only move lines, and the widening kernel's slices a one-token group (wslices=N) only regroup rows: every setting
// gives the same bits, one token or several, and the defaults come back.
// On the panels (owned weights: packed), with the vdpbf16ps kernel where the CPU has AVX512-BF16 and the widening
// kernel (set_isa(Avx2), and AVX-512 with set_bf16_dot(false)).
TEST(Bf16FastPath, PanelPrefetchSettingsDoNotChangeABit) {
  const bool old = cpu::set_quant_exact(false);
  std::mt19937 rng(17);
  const int m = 200, k = 384;  // 13 panels: groups of 3-4 with panels ahead of them to prefetch
  auto w = std::make_shared<Weights>(make_weights(DType::BF16, m, k, rng, false));
  TensorView W = w->view();
  W.keep_alive = w;
  for (auto [isa, dot] : {std::pair{cpu::Isa::Auto, true}, std::pair{cpu::Isa::Avx2, true},
                          std::pair{cpu::Isa::Avx512, false}}) {
    if (isa != cpu::Isa::Auto && !cpu::isa_supported(isa)) continue;
    cpu::set_isa(isa);
    cpu::set_bf16_dot(dot);
    if (std::string(cpu::active_isa()) == "scalar") continue;  // no panel kernel
    ASSERT_NE(cpu::detail::bf16_panels_for(W), nullptr);
    for (int n : {1, 3, 8, 16}) {
      const std::vector<float> x = random_vec(size_t(n) * k, rng, false);
      std::vector<float> first;
      for (int ahead : {-1, 0, 1, 3})
        for (int l1 : {-1, 0, 1})
          for (int slices : {-1, 1, 2, 3, 4}) {
            cpu::detail::set_panel_prefetch_groups(ahead);
            cpu::detail::set_panel_prefetch_l1(l1);
            cpu::detail::set_widen_slices_one_token(slices);
            std::vector<float> y(size_t(n) * m);
            cpu::linear(x.data(), n, W, nullptr, y.data());
            if (first.empty()) first = y;
            ASSERT_EQ(0, std::memcmp(first.data(), y.data(), y.size() * sizeof(float)))
                << cpu::active_isa() << " n=" << n << " ahead=" << ahead << " l1=" << l1 << " slices=" << slices;
          }
    }
  }
  cpu::set_isa(cpu::Isa::Auto);
  cpu::set_bf16_dot(true);
  cpu::detail::set_panel_prefetch_groups(-1);
  cpu::detail::set_panel_prefetch_l1(-1);
  cpu::detail::set_widen_slices_one_token(-1);
  EXPECT_EQ(cpu::detail::panel_prefetch_l1(), cpu::detail::panel_l1_suits(sysconf(_SC_LEVEL1_DCACHE_SIZE)));
  EXPECT_EQ(cpu::detail::panel_prefetch_groups(2), 2);
  EXPECT_EQ(cpu::detail::widen_slices_one_token(2), 2);
  cpu::detail::set_widen_slices_one_token(9);  // more than the tile table holds: clamped
  EXPECT_EQ(cpu::detail::widen_slices_one_token(2), 4);
  cpu::detail::set_widen_slices_one_token(-1);
  cpu::detail::set_panel_prefetch_l1(0);
  EXPECT_FALSE(cpu::detail::panel_prefetch_l1());
  cpu::detail::set_panel_prefetch_l1(-1);
  cpu::set_quant_exact(old);
}

// bf16 weights on CPUs without AVX512-BF16 (bf16_widen_panels.h; reached on any AVX2 CPU with set_isa(Avx2), and on
// any AVX-512 one with set_bf16_dot(false)): the panels widened exactly, so within f32 rounding of linear_reference's
// sum (two chains an output and a bias: (k + 2) 2^-23 sum|w x|), and each token's outputs the same bits alone and
// among other tokens in every tile position (AVX2 tiles of 1-6 tokens, AVX-512 of 1-8; 7, 8, 13 and 17 tokens split
// into balanced tiles), with partial panels and half panels (m not a multiple of 16 or of 8), odd k and a bias; and
// the same bits on AVX2 and AVX-512. The exact path keeps the row tiles: their sums, in another order, differ in the
// last bits somewhere, which tells that this kernel is the one that ran.
TEST(Bf16WideningPanels, ExactUpToF32SumsAndBatchInvariant) {
  if (!cpu::isa_supported(cpu::Isa::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  const bool old = cpu::set_quant_exact(false);
  const bool old_dot = cpu::set_bf16_dot(false);
  std::mt19937 rng(29);
  for (auto [m, k] : {std::pair{4, 3}, std::pair{13, 31}, std::pair{9, 32}, std::pair{7, 33}, std::pair{24, 48},
                      std::pair{64, 384}, std::pair{21, 1000}, std::pair{50, 385}}) {
    auto w = std::make_shared<Weights>(make_weights(DType::BF16, m, k, rng, false));
    TensorView W = w->view();
    W.keep_alive = w;
    const std::vector<float> bias = random_vec(size_t(m), rng, false);
    for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 17, 64}) {
      const std::vector<float> x = random_vec(size_t(n) * k, rng, false);
      std::vector<float> ref(size_t(n) * m), rows(size_t(n) * m), avx2;
      cpu::linear_reference(x.data(), n, W, bias.data(), ref.data());
      for (cpu::Isa isa : {cpu::Isa::Avx2, cpu::Isa::Avx512}) {
        if (!cpu::isa_supported(isa)) continue;
        ASSERT_EQ(cpu::set_isa(isa), isa);
        SCOPED_TRACE(cpu::active_isa());
        ASSERT_NE(cpu::detail::bf16_panels_for(W), nullptr) << "m=" << m << " k=" << k;
        std::vector<float> got(size_t(n) * m);
        cpu::linear(x.data(), n, W, bias.data(), got.data());
        cpu::set_quant_exact(true);
        cpu::linear(x.data(), n, W, bias.data(), rows.data());
        cpu::set_quant_exact(false);
        if (k >= 384 && n == 64)
          EXPECT_NE(0, std::memcmp(got.data(), rows.data(), got.size() * 4)) << "the row tiles ran: m=" << m << " k=" << k;
        for (int t = 0; t < n; ++t)
          for (int r = 0; r < m; ++r) {
            double abs_sum = std::fabs(double(bias[size_t(r)]));
            for (int i = 0; i < k; ++i) abs_sum += std::fabs(double(w->f32[size_t(r) * k + i]) * x[size_t(t) * k + i]);
            const double bound = (k + 2) * std::ldexp(1.0, -23) * abs_sum + 1e-30;
            ASSERT_LE(std::fabs(double(got[size_t(t) * m + r]) - ref[size_t(t) * m + r]), bound)
                << "m=" << m << " k=" << k << " n=" << n << " t=" << t << " r=" << r;
          }
        for (int t = 0; t < n; ++t) {  // alone == in the batch, bit for bit, every tile position
          std::vector<float> alone(static_cast<size_t>(m));
          cpu::linear(x.data() + size_t(t) * k, 1, W, bias.data(), alone.data());
          ASSERT_EQ(0, std::memcmp(alone.data(), got.data() + size_t(t) * m, sizeof(float) * size_t(m)))
              << "m=" << m << " k=" << k << " n=" << n << " t=" << t;
        }
        if (isa == cpu::Isa::Avx2) avx2 = got;
        else ASSERT_EQ(0, std::memcmp(avx2.data(), got.data(), got.size() * 4)) << "AVX2 and AVX-512 differ: m=" << m << " k=" << k << " n=" << n;
      }
    }
  }
  cpu::set_isa(cpu::Isa::Auto);
  cpu::set_bf16_dot(old_dot);
  cpu::set_quant_exact(old);
}

// Packed panels live as long as the weights' owner: weights freed and new ones allocated (often at the same address)
// are packed again, never computed with the old panels.
TEST(Bf16FastPath, PanelsFollowTheWeightsLifetime) {
  const bool old = cpu::set_quant_exact(false);
  std::mt19937 rng(5);
  const int m = 40, k = 96, n = 3;
  const std::vector<float> x = random_vec(size_t(n) * k, rng, false);
  for (int round = 0; round < 4; ++round) {
    auto w = std::make_shared<Weights>(make_weights(DType::BF16, m, k, rng, false));
    TensorView W = w->view();
    W.keep_alive = w;
    std::vector<float> got(size_t(n) * m), ref(size_t(n) * m);
    cpu::linear(x.data(), n, W, nullptr, got.data());
    cpu::linear_reference(x.data(), n, W, nullptr, ref.data());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], ref[i], 0.05) << "round " << round << " i " << i;
  }
  cpu::set_quant_exact(old);
}
