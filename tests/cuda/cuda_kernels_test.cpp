// Every CUDA kernel launcher (kernels/llama_kernels.h) against its CPU reference (kernels/kernel_refs.h) at the
// shapes the kernels are written for: Llama-3.2-1B (hidden 2048, 32 heads over 8 KV heads of 64) and
// Llama-3.1-8B (hidden 4096, 32/8 heads of 128, FFN 14336), tree masks of 1..64 rows, attention over a few
// thousand positions and up to 32k (decode rows and a tree of 16 at 8k and 32k). Built wherever nvcc is; every
// test is reported as SKIPPED when no CUDA device is visible, never counted as a pass. (The references themselves
// are checked on the CPU by kernel_refs_test.)
//
// Tolerances, as a kernel's error relative to the largest reference value (max |gpu - ref| / max |ref|):
//  - bit for bit: dequant_rows, embed_gather (exact products; quant_decode.h), to_half (round to nearest even),
//    add, add_bias, gather_rows, split_qkv (one rounding or none);
//  - ids exactly and probabilities within 1e-5 of the row's largest (its own, for probes): logit_summaries (expf
//    and another summation order against the CPU's vector softmax);
//  - 1e-5: rmsnorm, rope, silu_mul, gelu_tanh_mul (other summation orders, rsqrtf, sincosf and __expf against the CPU's libm and
//    vector exp: a few ulp);
//  - 1e-4: attention (scores summed over 64-128 dims and softmax sums over up to 32k slots in another order, and
//    __expf; cpu::attention is 2e-6 from a double-precision definition at 4k slots, 7e-6 at 16k), whichever path
//    the launcher takes (kernels/attention_paths.h: tiles of rows from 4 rows, else one block per row and head up
//    to 1024 slots, split over the context beyond);
//  - 2e-5: attention's split and row-tile paths against its single-block path on the same inputs at 4k slots (all
//    in f32 with __expf; only the order of the sums and the chunked paths' two-step exp(s - m_chunk) *
//    exp(m_chunk - m_max) differ: a few ulp per weight; the single-block path sums its 4k weights one after another,
//    as a tree row's decode must, and measured 1.0-1.3e-5 from the others on the H200, gpu_h200_2026-12-04d);
//  - bit for bit: a row's attention on the row-tile path whatever rows share its block.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <tuple>
#include <utility>

#include "kernels/attention_paths.h"
#include "kernels/cuda_check.h"
#include "kernels/cuda_context.h"
#include "kernels/kernel_refs.h"
#include "kernels/llama_kernels.h"
#include "tests/cuda/kernel_test_data.h"

using namespace specscope;
using namespace specscope::kernel_test;

namespace {

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device visible: the CUDA kernels are untested here";
  }
};

// A device copy of a host vector (or n uninitialised elements), freed with it. Launches go to the legacy default
// stream, so to_host()'s synchronisation orders them; it also surfaces a kernel's error as an exception.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { CUDA_CHECK(cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(T))); }
  explicit DeviceArray(const std::vector<T>& h) : DeviceArray(h.size()) {
    CUDA_CHECK(cudaMemcpy(p_, h.data(), sizeof(T) * n_, cudaMemcpyHostToDevice));
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(p_); }
  T* get() const { return p_; }
  std::vector<T> to_host() const {
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> h(n_);
    CUDA_CHECK(cudaMemcpy(h.data(), p_, sizeof(T) * n_, cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

constexpr cudaStream_t kStream = nullptr;  // the legacy default stream

std::vector<int32_t> random_ints(size_t n, int32_t lo, int32_t hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Exact agreement, or the first difference.
template <class T>
void expect_identical(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const BitDiff d = bit_diff(got, want);
  EXPECT_EQ(d.count, 0u) << what << ": " << d.count << " elements differ, the first at " << d.first;
}

}  // namespace

TEST_F(CudaKernels, DequantRowsAtModelShapes) {
  // Panels of rows from inside a matrix (row0 > 0), as linear() takes them, for the widths of q/k/v/o/gate/up
  // (hidden) and of down (FFN).
  const int rows = 96, row0 = 29, nrows = 64;
  uint32_t seed = 1;
  for (WType t : kBlockTypes)
    for (int cols : {kLlama1B.hidden, kLlama8B.hidden, kLlama8B.ffn}) {
      const std::vector<uint8_t> w = random_rows(t, rows, cols, seed++);
      DeviceArray<uint8_t> dw(w);
      DeviceArray<float> dout(size_t(nrows) * cols);
      cuda::dequant_rows(dw.get(), t, cols, row0, nrows, dout.get(), kStream);
      std::vector<float> want(size_t(nrows) * cols);
      cuda::ref::dequant_rows(w.data(), t, cols, row0, nrows, want.data());
      expect_identical(dout.to_host(), want, std::string(type_name(t)) + " cols " + std::to_string(cols));
    }
}

TEST_F(CudaKernels, EmbedGatherEveryTypeAtModelWidths) {
  const int vocab = 256;
  uint32_t seed = 50;
  for (WType t : kAllTypes)
    for (const Shape& s : kShapes)
      for (int n : {1, 7, 64}) {
        const std::vector<uint8_t> table = random_rows(t, vocab, s.hidden, seed++);
        std::vector<int32_t> tokens = random_ints(size_t(n), 0, vocab - 1, seed++);
        tokens.back() = vocab - 1;  // the table's last row
        DeviceArray<uint8_t> dt(table);
        DeviceArray<int32_t> dtok(tokens);
        DeviceArray<float> dout(size_t(n) * s.hidden);
        cuda::embed_gather(dt.get(), t, dtok.get(), n, s.hidden, dout.get(), kStream);
        std::vector<float> want(size_t(n) * s.hidden);
        cuda::ref::embed_gather(table.data(), t, tokens.data(), n, s.hidden, want.data());
        expect_identical(dout.to_host(), want, std::string(type_name(t)) + " " + s.name + " n " + std::to_string(n));
      }
}

TEST_F(CudaKernels, ToHalfRoundsLikeTheCpu) {
  // 64 rows of the 8B FFN width, spread over f16's subnormals up to past its largest value, and bf16's ties.
  const int64_t n = int64_t(64) * kLlama8B.ffn;
  std::vector<float> x = uniform(size_t(n), -2.f, 2.f, 7);
  const std::vector<int32_t> exps = random_ints(size_t(n), -30, 18, 8);
  for (int64_t i = 0; i < n; i += 3) x[i] = std::ldexp(x[i], exps[i]);
  x[1] = 1.f + 0x1p-8f, x[4] = 65520.f, x[7] = 0x1p-25f, x[10] = 1.f + 0x1p-11f;
  DeviceArray<float> dx(x);
  for (WType t : {WType::F16, WType::BF16}) {
    DeviceArray<uint16_t> dout{size_t(n)};
    cuda::to_half(dx.get(), dout.get(), t, n, kStream);
    std::vector<uint16_t> want(x.size());
    cuda::ref::to_half(x.data(), want.data(), t, n);
    expect_identical(dout.to_host(), want, type_name(t));
  }
}

TEST_F(CudaKernels, GemvAtModelWidthsAgainstTheDefinition) {
  // The widths of the 1B and 8B projections (hidden, FFN) and one that ends mid-way through the unrolled loop,
  // for 1..8 rows; 101 output columns (a block's 8 warps do not divide it) and, once, all 14336 of the 8B FFN.
  struct Case {
    int m, k;
  };
  const Case cases[] = {{101, kLlama1B.hidden}, {101, kLlama8B.hidden}, {101, kLlama8B.ffn}, {101, 2056},
                        {kLlama8B.ffn, kLlama8B.hidden}};
  uint32_t seed = 300;
  for (WType t : {WType::F32, WType::F16, WType::BF16})
    for (const Case& c : cases)
      for (int n : {1, 2, 5, 8}) {
        if (c.m > 1000 && n != 8) continue;  // the large case once per type: its reference takes a second
        const std::vector<uint8_t> w = random_rows(t, c.m, c.k, seed++);
        const std::vector<uint8_t> x = random_rows(t, n, c.k, seed++);  // activations in W's type
        ASSERT_TRUE(cuda::gemv_fits(t, n, c.k, reinterpret_cast<const void*>(16), reinterpret_cast<const void*>(32)));
        DeviceArray<uint8_t> dw(w), dx(x);
        DeviceArray<float> dy(size_t(n) * c.m);
        cuda::gemv(dw.get(), t, dx.get(), n, c.m, c.k, dy.get(), kStream);
        std::vector<float> want(size_t(n) * c.m);
        cuda::ref::gemv(w.data(), t, x.data(), n, c.m, c.k, want.data());
        EXPECT_LT(max_rel_diff(dy.to_host(), want), 1e-5)
            << type_name(t) << " m " << c.m << " k " << c.k << " n " << n;
      }
}

TEST_F(CudaKernels, GemvRowIsTheSameAloneAndAmongOthers) {
  // Losslessness of tree verification rests on a row's logits not depending on its batch: each row of an
  // 8-row product, bit for bit, against the same row computed alone and in a batch of 3.
  const int m = 333, k = kLlama8B.hidden;
  uint32_t seed = 400;
  for (WType t : {WType::F32, WType::F16, WType::BF16}) {
    const std::vector<uint8_t> w = random_rows(t, m, k, seed++);
    const std::vector<uint8_t> x = random_rows(t, 8, k, seed++);
    const size_t row_bytes_x = x.size() / 8;
    DeviceArray<uint8_t> dw(w), dx(x);
    DeviceArray<float> all(size_t(8) * m);
    cuda::gemv(dw.get(), t, dx.get(), 8, m, k, all.get(), kStream);
    const std::vector<float> batch = all.to_host();
    for (int r = 0; r < 8; ++r) {
      const std::vector<uint8_t> xr(x.begin() + long(r * row_bytes_x), x.begin() + long((r + 1) * row_bytes_x));
      DeviceArray<uint8_t> dxr(xr);
      DeviceArray<float> alone{size_t(m)};
      cuda::gemv(dw.get(), t, dxr.get(), 1, m, k, alone.get(), kStream);
      expect_identical(alone.to_host(), std::vector<float>(batch.begin() + long(r) * m, batch.begin() + long(r + 1) * m),
                       std::string(type_name(t)) + " row " + std::to_string(r) + " alone");
    }
    DeviceArray<float> three(size_t(3) * m);
    cuda::gemv(dw.get(), t, dx.get(), 3, m, k, three.get(), kStream);
    expect_identical(three.to_host(), std::vector<float>(batch.begin(), batch.begin() + 3 * m),
                     std::string(type_name(t)) + " rows 0-2 as a batch of 3");
  }
}

TEST_F(CudaKernels, BlockGemvOfEveryBlockTypeAgainstTheDefinitionAndAlone) {
  // GGUF block weights read as blocks (block_gemv, SPECSCOPE_CUDA_GEMV=1): every block type at the 1B and 8B widths
  // (hidden, FFN), 1..8 rows, 101 output columns (a block's 8 warps do not divide it), against the reference within
  // f32 summation; and each row of an 8-row product bit for bit the same row alone (a tree row and its decode).
  uint32_t seed = 450;
  for (WType t : kBlockTypes)
    for (int k : {kLlama1B.hidden, kLlama8B.ffn}) {
      const int m = 101;
      const std::vector<uint8_t> w = random_rows(t, m, k, seed++);
      const std::vector<float> x = uniform(size_t(8) * k, -1.f, 1.f, seed++);
      DeviceArray<uint8_t> dw(w);
      DeviceArray<float> dx(x), dy(size_t(8) * m);
      const std::string what = std::string(type_name(t)) + " k " + std::to_string(k);
      for (int n : {1, 3, 8}) {
        ASSERT_TRUE(cuda::block_gemv_fits(t, n, k, dx.get())) << what;
        cuda::block_gemv(dw.get(), t, dx.get(), n, m, k, dy.get(), kStream);
        std::vector<float> want(size_t(n) * m);
        cuda::ref::block_gemv(w.data(), t, x.data(), n, m, k, want.data());
        std::vector<float> got = dy.to_host();
        got.resize(want.size());
        EXPECT_LT(max_rel_diff(got, want), 1e-5) << what << " n " << n;
      }
      const std::vector<float> batch = dy.to_host();  // the 8-row product
      for (int r : {0, 5, 7}) {
        DeviceArray<float> alone{size_t(m)};
        cuda::block_gemv(dw.get(), t, dx.get() + size_t(r) * k, 1, m, k, alone.get(), kStream);
        expect_identical(alone.to_host(), std::vector<float>(batch.begin() + long(r) * m, batch.begin() + long(r + 1) * m),
                         what + " row " + std::to_string(r) + " alone");
      }
    }
  EXPECT_FALSE(cuda::block_gemv_fits(WType::BF16, 1, 4096, reinterpret_cast<const float*>(256)));
  EXPECT_FALSE(cuda::block_gemv_fits(WType::Q8_0, cuda::kGemvMaxRows + 1, 4096, reinterpret_cast<const float*>(256)));
  EXPECT_FALSE(cuda::block_gemv_fits(WType::Q8_0, 1, 4096, reinterpret_cast<const float*>(260)));
  EXPECT_TRUE(cuda::block_gemv_fits(WType::Q8_0, 1, 4096 + 32, reinterpret_cast<const float*>(256)));
  EXPECT_FALSE(cuda::block_gemv_fits(WType::Q4_K, 1, 4096 + 32, reinterpret_cast<const float*>(256)));  // part of a block
}

TEST_F(CudaKernels, GemvRefusesWhatItDoesNotTake) {
  const void* aligned = reinterpret_cast<const void*>(256);
  EXPECT_FALSE(cuda::gemv_fits(WType::BF16, cuda::kGemvMaxRows + 1, 4096, aligned, aligned));
  EXPECT_FALSE(cuda::gemv_fits(WType::BF16, 0, 4096, aligned, aligned));
  EXPECT_FALSE(cuda::gemv_fits(WType::Q8_0, 1, 4096, aligned, aligned));
  EXPECT_FALSE(cuda::gemv_fits(WType::BF16, 1, 4100, aligned, aligned));  // not whole 16-byte vectors
  EXPECT_FALSE(cuda::gemv_fits(WType::F32, 1, 4096, reinterpret_cast<const void*>(260), aligned));
  EXPECT_TRUE(cuda::gemv_fits(WType::F32, 1, 4100, aligned, aligned));
}

TEST_F(CudaKernels, RmsNormAtModelShapes) {
  uint32_t seed = 100;
  for (const Shape& s : kShapes)
    for (int rows : {1, 7, 64}) {
      const std::vector<float> x = uniform(size_t(rows) * s.hidden, -2.f, 2.f, seed++);
      const std::vector<float> w = uniform(size_t(s.hidden), 0.5f, 1.5f, seed++);
      std::vector<float> want(x.size());
      cuda::ref::rmsnorm(x.data(), w.data(), want.data(), rows, s.hidden, 1e-5f);
      DeviceArray<float> dx(x), dw(w), dy(x.size());
      cuda::rmsnorm(dx.get(), dw.get(), dy.get(), rows, s.hidden, 1e-5f, kStream);
      EXPECT_LT(max_rel_diff(dy.to_host(), want), 1e-5) << s.name << " rows " << rows;
      cuda::rmsnorm(dx.get(), dw.get(), dx.get(), rows, s.hidden, 1e-5f, kStream);  // in place (y aliases x)
      EXPECT_LT(max_rel_diff(dx.to_host(), want), 1e-5) << s.name << " rows " << rows << " in place";
    }
}

TEST_F(CudaKernels, RopeOfQueriesAndKeysAtTreePositions) {
  uint32_t seed = 200;
  for (const Shape& s : kShapes) {
    const std::vector<float> freq = inv_freq(s.head_dim);
    DeviceArray<float> dfreq(freq);
    for (int rows : {1, 16, 64})
      for (int heads : {s.heads, s.kv_heads}) {
        // Arbitrary positions, repeats included: a tree's siblings share theirs.
        const std::vector<int32_t> pos = random_ints(size_t(rows), 0, 8191, seed++);
        std::vector<float> v = uniform(size_t(rows) * heads * s.head_dim, -2.f, 2.f, seed++);
        DeviceArray<float> dv(v);
        DeviceArray<int32_t> dpos(pos);
        cuda::rope(dv.get(), rows, heads, s.head_dim, dpos.get(), dfreq.get(), kStream);
        cuda::ref::rope(v.data(), rows, heads, s.head_dim, pos.data(), freq.data());
        EXPECT_LT(max_rel_diff(dv.to_host(), v), 1e-5) << s.name << " rows " << rows << " heads " << heads;
      }
  }
}

// Phi's partial rotary with LongRoPE's attention factor (Phi-4-mini: 96 of 128 dimensions, factor 1.19): the
// turned dimensions against the CPU reference (cpu::rope_angles with the scale, then rope_rotate), the others
// untouched bit for bit, separate launches and the fused one alike.
TEST_F(CudaKernels, PartialRotaryWithAnAttentionFactor) {
  uint32_t seed = 230;
  const int head_dim = 128, rotary = 96, nh = 6, nkv = 2;
  const float factor = 1.190238f;
  std::vector<float> freq(rotary / 2);
  for (int i = 0; i < rotary / 2; ++i) freq[size_t(i)] = 1.f / (std::pow(10000.f, float(2 * i) / rotary) * (1.f + 0.1f * i));
  DeviceArray<float> dfreq(freq);
  for (int rows : {1, 9, 64}) {
    const std::vector<int32_t> pos = random_ints(size_t(rows), 0, 131071, seed++);
    DeviceArray<int32_t> dpos(pos);
    const std::vector<float> q = uniform(size_t(rows) * nh * head_dim, -2.f, 2.f, seed++);
    const std::vector<float> k = uniform(size_t(rows) * nkv * head_dim, -2.f, 2.f, seed++);
    std::vector<float> want_q = q, want_k = k;
    cuda::ref::rope(want_q.data(), rows, nh, head_dim, pos.data(), freq.data(), rotary, factor);
    cuda::ref::rope(want_k.data(), rows, nkv, head_dim, pos.data(), freq.data(), rotary, factor);
    DeviceArray<float> dq(q), dk(k), fq(q), fk(k);
    cuda::rope(dq.get(), rows, nh, head_dim, dpos.get(), dfreq.get(), kStream, rotary, factor);
    cuda::rope(dk.get(), rows, nkv, head_dim, dpos.get(), dfreq.get(), kStream, rotary, factor);
    cuda::rope_qk(fq.get(), fk.get(), rows, nh, nkv, head_dim, dpos.get(), dfreq.get(), kStream, rotary, factor);
    const std::vector<float> got_q = dq.to_host();
    EXPECT_LT(max_rel_diff(got_q, want_q), 1e-5) << "rows " << rows;
    EXPECT_LT(max_rel_diff(dk.to_host(), want_k), 1e-5) << "rows " << rows;
    for (size_t h = 0; h < size_t(rows) * nh; ++h)
      for (int d = rotary; d < head_dim; ++d)
        ASSERT_EQ(got_q[h * head_dim + size_t(d)], q[h * head_dim + size_t(d)]) << "head " << h << " dim " << d;
    expect_identical(fq.to_host(), got_q, "rope_qk's queries, rows " + std::to_string(rows));
    expect_identical(fk.to_host(), dk.to_host(), "rope_qk's keys, rows " + std::to_string(rows));
  }
}

// The fused launches (llama_kernels.h) give the separate launches' bits: a residual add and the norm after it, and
// RoPE of a row's queries and keys at once (the 8B decode step's launch count, issue 23).
TEST_F(CudaKernels, FusedAddRmsNormAndRopeGiveTheSeparateLaunchesBits) {
  uint32_t seed = 250;
  for (const Shape& s : kShapes)
    for (int rows : {1, 7, 64}) {
      const std::vector<float> x = uniform(size_t(rows) * s.hidden, -2.f, 2.f, seed++);
      const std::vector<float> h = uniform(size_t(rows) * s.hidden, -2.f, 2.f, seed++);
      const std::vector<float> w = uniform(size_t(s.hidden), 0.5f, 1.5f, seed++);
      DeviceArray<float> dx(x), dh(h), dw(w), dy(x.size());
      cuda::add(dh.get(), dx.get(), int64_t(rows) * s.hidden, kStream);
      cuda::rmsnorm(dx.get(), dw.get(), dy.get(), rows, s.hidden, 1e-5f, kStream);
      const std::vector<float> want_x = dx.to_host(), want_y = dy.to_host();
      DeviceArray<float> fx(x), fh(h);
      // y aliases h, and the 16-bit copy (the next products' input) is written beside it.
      DeviceArray<uint16_t> y16(x.size()), want16(x.size());
      const cuda::WType t16 = rows == 7 ? cuda::WType::F16 : cuda::WType::BF16;
      cuda::add_rmsnorm(fh.get(), fx.get(), dw.get(), fh.get(), rows, s.hidden, 1e-5f, kStream, y16.get(), t16);
      const std::string what = std::string(s.name) + " rows " + std::to_string(rows);
      expect_identical(fx.to_host(), want_x, "add_rmsnorm's sum, " + what);
      expect_identical(fh.to_host(), want_y, "add_rmsnorm's norm, " + what);
      cuda::to_half(dy.get(), want16.get(), t16, int64_t(rows) * s.hidden, kStream);
      expect_identical(y16.to_host(), want16.to_host(), "add_rmsnorm's 16-bit copy, " + what);
      // silu_mul's 16-bit copy of its output (the down product's input).
      const std::vector<float> g = uniform(size_t(rows) * s.ffn, -10.f, 10.f, seed++);
      const std::vector<float> u = uniform(size_t(rows) * s.ffn, -2.f, 2.f, seed++);
      DeviceArray<float> dg(g), du(u), plain(g.size()), with16(g.size());
      DeviceArray<uint16_t> o16(g.size()), o16_want(g.size());
      cuda::silu_mul(dg.get(), du.get(), plain.get(), int64_t(rows) * s.ffn, kStream);
      cuda::silu_mul(dg.get(), du.get(), with16.get(), int64_t(rows) * s.ffn, kStream, o16.get(), t16);
      cuda::to_half(plain.get(), o16_want.get(), t16, int64_t(rows) * s.ffn, kStream);
      expect_identical(with16.to_host(), plain.to_host(), "silu_mul with a 16-bit copy, " + what);
      expect_identical(o16.to_host(), o16_want.to_host(), "silu_mul's 16-bit copy, " + what);
      // And against the CPU references of the two.
      std::vector<float> rx = x, ry(x.size());
      cuda::ref::add(h.data(), rx.data(), int64_t(rows) * s.hidden);
      cuda::ref::rmsnorm(rx.data(), w.data(), ry.data(), rows, s.hidden, 1e-5f);
      EXPECT_LT(max_rel_diff(fh.to_host(), ry), 1e-5) << what;

      const std::vector<float> freq = inv_freq(s.head_dim);
      DeviceArray<float> dfreq(freq);
      const std::vector<int32_t> pos = random_ints(size_t(rows), 0, 8191, seed++);
      DeviceArray<int32_t> dpos(pos);
      const std::vector<float> q = uniform(size_t(rows) * s.heads * s.head_dim, -2.f, 2.f, seed++);
      const std::vector<float> k = uniform(size_t(rows) * s.kv_heads * s.head_dim, -2.f, 2.f, seed++);
      DeviceArray<float> sq(q), sk(k), fq(q), fk(k);
      cuda::rope(sq.get(), rows, s.heads, s.head_dim, dpos.get(), dfreq.get(), kStream);
      cuda::rope(sk.get(), rows, s.kv_heads, s.head_dim, dpos.get(), dfreq.get(), kStream);
      cuda::rope_qk(fq.get(), fk.get(), rows, s.heads, s.kv_heads, s.head_dim, dpos.get(), dfreq.get(), kStream);
      expect_identical(fq.to_host(), sq.to_host(), "rope_qk's queries, " + what);
      expect_identical(fk.to_host(), sk.to_host(), "rope_qk's keys, " + what);
    }
}

TEST_F(CudaKernels, ElementwiseAtModelShapes) {
  // The FFN of one token (1B) and of 64 (8B), and more elements than one grid covers (its stride loop).
  const int64_t beyond_grid = int64_t(65535) * 256 + 1001;
  uint32_t seed = 300;
  for (int64_t n : {int64_t(kLlama1B.ffn), int64_t(64) * kLlama8B.ffn, beyond_grid}) {
    const std::vector<float> g = uniform(size_t(n), -10.f, 10.f, seed++), u = uniform(size_t(n), -2.f, 2.f, seed++);
    DeviceArray<float> dg(g), du(u), dout(g.size());
    cuda::silu_mul(dg.get(), du.get(), dout.get(), n, kStream);
    std::vector<float> want(g.size());
    cuda::ref::silu_mul(g.data(), u.data(), want.data(), n);
    EXPECT_LT(max_rel_diff(dout.to_host(), want), 1e-5) << "silu_mul n " << n;
    cuda::gelu_tanh_mul(dg.get(), du.get(), dout.get(), n, kStream);
    cuda::ref::gelu_tanh_mul(g.data(), u.data(), want.data(), n);
    EXPECT_LT(max_rel_diff(dout.to_host(), want), 1e-5) << "gelu_tanh_mul n " << n;
    DeviceArray<float> dcapped(g);  // Gemma 2's final soft cap over logits of up to +-10
    cuda::soft_cap(dcapped.get(), 4.f, n, kStream);
    std::vector<float> capped = g;
    cuda::ref::soft_cap(capped.data(), 4.f, n);
    EXPECT_LT(max_rel_diff(dcapped.to_host(), capped), 1e-5) << "soft_cap n " << n;
    DeviceArray<float> dscaled(g);
    cuda::scale(dscaled.get(), 1.75f, n, kStream);
    std::vector<float> scaled = g;
    cuda::ref::scale(scaled.data(), 1.75f, n);
    expect_identical(dscaled.to_host(), scaled, "scale n " + std::to_string(n));
    cuda::add(dg.get(), du.get(), n, kStream);  // u += g
    std::vector<float> sum = u;
    cuda::ref::add(g.data(), sum.data(), n);
    expect_identical(du.to_host(), sum, "add n " + std::to_string(n));
  }
}

TEST_F(CudaKernels, AddBiasAndGatherRowsAtModelShapes) {
  uint32_t seed = 400;
  // q, k/v (1B and 8B), o, and gate/up widths.
  for (int cols : {kLlama1B.hidden, kLlama1B.kv_heads * kLlama1B.head_dim, kLlama8B.kv_heads * kLlama8B.head_dim,
                   kLlama8B.hidden, kLlama8B.ffn}) {
    const int rows = 64;
    std::vector<float> y = uniform(size_t(rows) * cols, -2.f, 2.f, seed++);
    const std::vector<float> b = uniform(size_t(cols), -1.f, 1.f, seed++);
    DeviceArray<float> dy(y), db(b);
    cuda::add_bias(dy.get(), db.get(), rows, cols, kStream);
    cuda::ref::add_bias(y.data(), b.data(), rows, cols);
    expect_identical(dy.to_host(), y, "add_bias cols " + std::to_string(cols));
  }
  // Rows taking bias rows in turn (streams' embeddings: 5 sources x 3 streams).
  for (int cols : {kLlama1B.hidden, kLlama8B.hidden}) {
    const int rows = 15, bias_rows = 3;
    std::vector<float> y = uniform(size_t(rows) * cols, -2.f, 2.f, seed++);
    const std::vector<float> b = uniform(size_t(bias_rows) * cols, -1.f, 1.f, seed++);
    DeviceArray<float> dy(y), db(b);
    cuda::add_bias(dy.get(), db.get(), rows, cols, kStream, bias_rows);
    cuda::ref::add_bias(y.data(), b.data(), rows, cols, bias_rows);
    expect_identical(dy.to_host(), y, "add_bias in turn, cols " + std::to_string(cols));
  }
  for (const Shape& s : kShapes)
    for (int nr : {1, 5, 64}) {
      const std::vector<float> x = uniform(size_t(64) * s.hidden, -2.f, 2.f, seed++);
      const std::vector<int32_t> pick = random_ints(size_t(nr), 0, 63, seed++);  // repeats allowed
      DeviceArray<float> dx(x), dout(size_t(nr) * s.hidden);
      DeviceArray<int32_t> dpick(pick);
      cuda::gather_rows(dx.get(), dpick.get(), nr, s.hidden, dout.get(), kStream);
      std::vector<float> want(size_t(nr) * s.hidden);
      cuda::ref::gather_rows(x.data(), pick.data(), nr, s.hidden, want.data());
      expect_identical(dout.to_host(), want, std::string("gather_rows ") + s.name + " rows " + std::to_string(nr));
    }
}

TEST_F(CudaKernels, SplitQkvCopiesEachPartOfOneProduct) {
  // One q/k/v product's rows [q | k | v] apart into q, k and v (kernels/elementwise.cu), bit for bit, at both shapes
  // and for 1 to 64 rows.
  uint32_t seed = 2500;
  for (const Shape& s : kShapes)
    for (int rows : {1, 7, 64}) {
      const int q_dim = s.heads * s.head_dim, kv_dim = s.kv_heads * s.head_dim;
      const std::vector<float> qkv = uniform(size_t(rows) * (q_dim + 2 * kv_dim), -2.f, 2.f, seed++);
      DeviceArray<float> dqkv(qkv), dq(size_t(rows) * q_dim), dk(size_t(rows) * kv_dim), dv(size_t(rows) * kv_dim);
      cuda::split_qkv(dqkv.get(), rows, q_dim, kv_dim, dq.get(), dk.get(), dv.get(), kStream);
      std::vector<float> q(size_t(rows) * q_dim), k(size_t(rows) * kv_dim), v(size_t(rows) * kv_dim);
      cuda::ref::split_qkv(qkv.data(), rows, q_dim, kv_dim, q.data(), k.data(), v.data());
      const std::string what = std::string("split_qkv ") + s.name + " rows " + std::to_string(rows);
      expect_identical(dq.to_host(), q, what + " q");
      expect_identical(dk.to_host(), k, what + " k");
      expect_identical(dv.to_host(), v, what + " v");
    }
}

TEST_F(CudaKernels, ExpertRoutingProductsAndSumsMatchTheReferences) {
  // kernels/experts.cu against experts_ref.cpp: Mixtral's 8 experts choosing 2, Qwen3-MoE's 128 choosing 8 (E, k), at
  // widths of 512 inputs and 256 expert rows (multiples of the K-quants' 256), 1 to 33 rows, every weight type for
  // the products. The routing's picks are the reference's exactly, its weights within f32 rounding; the products
  // within f32 summation; the sums bit for bit (the same fma chain). And a row's products alone are the bits it gets
  // among others: a tree row and its own decode multiply alike.
  const int H = 512, F = 256;
  uint32_t seed = 3300;
  for (const auto& [E, k] : {std::pair{8, 2}, std::pair{128, 8}})
    for (int rows : {1, 7, 33}) {
      const std::string shape = std::to_string(E) + " experts, " + std::to_string(k) + " a row, " +
                                std::to_string(rows) + " rows";
      std::vector<float> logits = uniform(size_t(rows) * E, -4.f, 4.f, seed++);
      DeviceArray<float> dlogits(logits), dw(size_t(rows) * k);
      DeviceArray<int32_t> dids(size_t(rows) * k);
      cuda::route_experts(dlogits.get(), rows, E, k, true, dids.get(), dw.get(), kStream);
      std::vector<int32_t> ids(size_t(rows) * k);
      std::vector<float> weights(ids.size());
      cuda::ref::route_experts(logits.data(), rows, E, k, true, ids.data(), weights.data());
      expect_identical(dids.to_host(), ids, shape + ": routing picks");
      EXPECT_LT(max_rel_diff(dw.to_host(), weights), 1e-6) << shape << ": routing weights";
      EXPECT_LT(max_rel_diff(dlogits.to_host(), logits), 1e-6) << shape << ": routing probabilities";

      const std::vector<float> x = uniform(size_t(rows) * H, -1.f, 1.f, seed++);
      const std::vector<float> act = uniform(ids.size() * F, -1.f, 1.f, seed++);  // each pick's own down input
      DeviceArray<float> dx(x), dact(act);
      for (WType t : kAllTypes) {
        const std::string what = shape + ", " + type_name(t);
        // gate/up: [F, H] per expert, every pick reading its row; down: [H, F], each pick its own input.
        const std::vector<uint8_t> up = random_rows(t, E * F, H, seed++), down = random_rows(t, E * H, F, seed++);
        DeviceArray<uint8_t> dup(up), ddown(down);
        DeviceArray<float> gy(ids.size() * F), dy(ids.size() * H);
        cuda::expert_products(dup.get(), t, F, H, dids.get(), rows, k, dx.get(), H, 0, gy.get(), kStream);
        cuda::expert_products(ddown.get(), t, H, F, dids.get(), rows, k, dact.get(), int64_t(k) * F, F, dy.get(),
                              kStream);
        std::vector<float> want_g(ids.size() * F), want_d(ids.size() * H);
        cuda::ref::expert_products(up.data(), t, F, H, ids.data(), rows, k, x.data(), H, 0, want_g.data());
        cuda::ref::expert_products(down.data(), t, H, F, ids.data(), rows, k, act.data(), int64_t(k) * F, F,
                                   want_d.data());
        const std::vector<float> got_g = gy.to_host(), got_d = dy.to_host();
        EXPECT_LT(max_rel_diff(got_g, want_g), 1e-5) << what << ": gate/up products";
        EXPECT_LT(max_rel_diff(got_d, want_d), 1e-5) << what << ": down products";
        {  // grouped by expert: an expert read once for up to 8 picks, every output the same bits
          const int picks = rows * k, bound = cuda::expert_groups_bound(picks, E);
          DeviceArray<int32_t> order(static_cast<size_t>(picks));
          DeviceArray<cuda::ExpertGroup> groups(static_cast<size_t>(bound));
          cuda::group_expert_picks(dids.get(), picks, E, order.get(), groups.get(), kStream);
          const cuda::ExpertGrouping grouping{order.get(), groups.get(), bound};
          DeviceArray<float> ggy(ids.size() * F), gdy(ids.size() * H);
          cuda::expert_products(dup.get(), t, F, H, dids.get(), rows, k, dx.get(), H, 0, ggy.get(), kStream, &grouping);
          cuda::expert_products(ddown.get(), t, H, F, dids.get(), rows, k, dact.get(), int64_t(k) * F, F, gdy.get(),
                                kStream, &grouping);
          expect_identical(ggy.to_host(), got_g, what + ": gate/up products grouped by expert");
          expect_identical(gdy.to_host(), got_d, what + ": down products grouped by expert");
        }
        if (rows > 1) {  // the last row alone
          const int r = rows - 1;
          DeviceArray<float> lone(size_t(k) * H);
          cuda::expert_products(ddown.get(), t, H, F, dids.get() + r * k, 1, k, dact.get() + size_t(r) * k * F,
                                int64_t(k) * F, F, lone.get(), kStream);
          const std::vector<float> alone = lone.to_host();
          EXPECT_EQ(std::memcmp(alone.data(), got_d.data() + size_t(r) * k * H, sizeof(float) * alone.size()), 0)
              << what << ": a row's products alone differ from the same row's among others";
        }
      }

      const std::vector<float> outs = uniform(ids.size() * H, -1.f, 1.f, seed++);
      const std::vector<float> shared = uniform(size_t(rows) * H, -1.f, 1.f, seed++);
      const std::vector<float> gate = uniform(size_t(H), -0.1f, 0.1f, seed++);
      DeviceArray<float> douts(outs), dshared(shared), dgate(gate), dscales(static_cast<size_t>(rows)), dsum(size_t(rows) * H);
      cuda::shared_expert_scales(dgate.get(), dx.get(), rows, H, dscales.get(), kStream);
      std::vector<float> scales(static_cast<size_t>(rows)), sum(size_t(rows) * H);
      cuda::ref::shared_expert_scales(gate.data(), x.data(), rows, H, scales.data());
      const std::vector<float> got_scales = dscales.to_host();
      EXPECT_LT(max_rel_diff(got_scales, scales), 1e-6) << shape << ": shared-expert gates";
      DeviceArray<float> dscales_ref(scales);  // the sums below from the same scales, so their bits can match
      for (const bool with_shared : {false, true}) {
        cuda::sum_expert_outputs(douts.get(), dw.get(), rows, k, H, with_shared ? dshared.get() : nullptr,
                                 dscales_ref.get(), dsum.get(), kStream);
        cuda::ref::sum_expert_outputs(outs.data(), dw.to_host().data(), rows, k, H,
                                      with_shared ? shared.data() : nullptr, scales.data(), sum.data());
        expect_identical(dsum.to_host(), sum, shape + (with_shared ? ": sums with a shared expert" : ": sums"));
      }
    }
}

TEST_F(CudaKernels, ExpertPicksGroupedAsTheReferenceGroupsThem) {
  // group_expert_picks against its reference: the same groups (each expert's runs of at most 8, in expert order, the
  // rest empty), and within each expert's part of `order` the same picks (the kernel places them in any order).
  uint32_t seed = 3450;
  for (const auto& [E, k, rows] : {std::tuple{8, 2, 1}, std::tuple{8, 2, 33}, std::tuple{128, 8, 7},
                                   std::tuple{128, 8, 64}, std::tuple{60, 4, 2049}}) {
    const int picks = rows * k, bound = cuda::expert_groups_bound(picks, E);
    std::vector<float> logits = uniform(size_t(rows) * E, -4.f, 4.f, seed++);
    std::vector<int32_t> ids(static_cast<size_t>(picks));
    std::vector<float> weights(ids.size());
    cuda::ref::route_experts(logits.data(), rows, E, k, true, ids.data(), weights.data());
    std::vector<int32_t> want_order(ids.size());
    std::vector<cuda::ExpertGroup> want_groups(static_cast<size_t>(bound));
    cuda::ref::group_expert_picks(ids.data(), picks, E, want_order.data(), want_groups.data());
    DeviceArray<int32_t> dids(ids), order(ids.size());
    DeviceArray<cuda::ExpertGroup> groups(want_groups.size());
    cuda::group_expert_picks(dids.get(), picks, E, order.get(), groups.get(), kStream);
    const std::vector<cuda::ExpertGroup> got_groups = groups.to_host();
    std::vector<int32_t> got_order = order.to_host();
    const std::string what = std::to_string(E) + " experts, " + std::to_string(k) + " a row, " + std::to_string(rows) +
                             " rows";
    for (int g = 0; g < bound; ++g) {
      const auto &a = got_groups[size_t(g)], &b = want_groups[size_t(g)];
      EXPECT_TRUE(a.first == b.first && a.count == b.count && a.expert == b.expert) << what << ": group " << g;
      if (b.count > 0) std::sort(got_order.begin() + b.first, got_order.begin() + b.first + b.count);
    }
    EXPECT_EQ(got_order, want_order) << what << ": each expert's picks";
  }
}

TEST_F(CudaKernels, ExpertProductsOfAPrefillPastTheGridsYLimit) {
  // A Qwen3-MoE prefill of 8,200 tokens, 8 picks each: 65,600 products, more than a grid's y dimension holds (65,535;
  // the products once sat there, and such a prefill failed to launch). The last row's products against the reference
  // and bit for bit the same row alone.
  const int E = 128, k = 8, rows = 8200, H = 512, F = 256;
  const WType t = WType::Q8_0;
  std::vector<int32_t> ids(size_t(rows) * k);
  for (size_t p = 0; p < ids.size(); ++p) ids[p] = int32_t((p * 37 + p / k) % E);
  const std::vector<float> x = uniform(size_t(rows) * H, -1.f, 1.f, 3400);
  const std::vector<uint8_t> up = random_rows(t, E * F, H, 3401);
  DeviceArray<uint8_t> dup(up);
  DeviceArray<int32_t> dids(ids);
  DeviceArray<float> dx(x), gy(ids.size() * F), lone(size_t(k) * F);
  cuda::expert_products(dup.get(), t, F, H, dids.get(), rows, k, dx.get(), H, 0, gy.get(), kStream);
  const int r = rows - 1;
  cuda::expert_products(dup.get(), t, F, H, dids.get() + size_t(r) * k, 1, k, dx.get() + size_t(r) * H, H, 0,
                        lone.get(), kStream);
  std::vector<float> want(size_t(k) * F);
  cuda::ref::expert_products(up.data(), t, F, H, ids.data() + size_t(r) * k, 1, k, x.data() + size_t(r) * H, H, 0,
                             want.data());
  const std::vector<float> all = gy.to_host(), alone = lone.to_host();
  const std::vector<float> last(all.end() - long(k) * F, all.end());
  EXPECT_LT(max_rel_diff(last, want), 1e-5) << "the last row's products";
  expect_identical(alone, last, "the last row alone");
  // Grouped by expert, as a forward of that many rows runs them: 65,600 picks in 8,328 groups or fewer.
  const int picks = rows * k, bound = cuda::expert_groups_bound(picks, E);
  DeviceArray<int32_t> order(static_cast<size_t>(picks));
  DeviceArray<cuda::ExpertGroup> groups(static_cast<size_t>(bound));
  cuda::group_expert_picks(dids.get(), picks, E, order.get(), groups.get(), kStream);
  const cuda::ExpertGrouping grouping{order.get(), groups.get(), bound};
  DeviceArray<float> grouped(ids.size() * F);
  cuda::expert_products(dup.get(), t, F, H, dids.get(), rows, k, dx.get(), H, 0, grouped.get(), kStream, &grouping);
  expect_identical(grouped.to_host(), all, "every product grouped by expert");
}

namespace {

// One attention call on the GPU: `launch` gets the case's device pointers (q, k, v, slot_pos, mask or nullptr,
// positions, out) and the output comes back, checked finite.
template <class Launch>
std::vector<float> attention_on_gpu(const AttentionCase& c, const std::string& what, Launch launch) {
  DeviceArray<float> dq(c.q), dk(c.k), dv(c.v), dout(size_t(c.n) * c.nh * c.hd);
  DeviceArray<int32_t> dslot(c.slot_pos), dpos(c.positions);
  DeviceArray<uint8_t> dmask(c.mask);
  launch(dq.get(), dk.get(), dv.get(), dslot.get(), c.mask.empty() ? nullptr : dmask.get(), dpos.get(), dout.get());
  std::vector<float> got = dout.to_host();
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](float f) { return std::isfinite(f); })) << what;
  return got;
}

std::vector<float> attention_reference(const AttentionCase& c) {
  std::vector<float> want(size_t(c.n) * c.nh * c.hd);
  cuda::ref::attention(c.q.data(), c.k.data(), c.v.data(), c.slot_pos.data(), c.mask.empty() ? nullptr : c.mask.data(),
                       c.positions.data(), c.n, c.base, c.nh, c.nkv, c.hd, c.window, c.soft_cap, want.data());
  return want;
}

// The launcher (whichever path it picks) against the reference.
void check_attention(const AttentionCase& c, const std::string& what) {
  const std::vector<float> got =
      attention_on_gpu(c, what, [&](const float* q, const float* k, const float* v, const int32_t* slot,
                                    const uint8_t* mask, const int32_t* pos, float* out) {
        cuda::attention(q, k, v, slot, mask, pos, c.n, c.base, c.nh, c.nkv, c.hd, c.window, c.soft_cap, out, kStream);
      });
  EXPECT_LT(max_rel_diff(got, attention_reference(c)), 1e-4) << what;
}

// Each path run directly: the single-block one, and the split one cut into at most `splits` chunks.
std::vector<float> single_block_attention(const AttentionCase& c, const std::string& what) {
  return attention_on_gpu(c, what, [&](const float* q, const float* k, const float* v, const int32_t* slot,
                                       const uint8_t* mask, const int32_t* pos, float* out) {
    cuda::attention_paths::single_block(q, k, v, slot, mask, pos, c.n, c.base, c.nh, c.nkv, c.hd, c.window, c.soft_cap, out,
                                        kStream);
  });
}
std::vector<float> split_attention(const AttentionCase& c, int splits, const std::string& what) {
  return attention_on_gpu(c, what, [&](const float* q, const float* k, const float* v, const int32_t* slot,
                                       const uint8_t* mask, const int32_t* pos, float* out) {
    cuda::attention_paths::split_context(q, k, v, slot, mask, pos, c.n, c.base, c.nh, c.nkv, c.hd, c.window, c.soft_cap, splits,
                                         out, kStream);
  });
}

// The row-tile path in its own chunks (attention_paths.h, canonical_chunks), with `scratch` or allocating.
std::vector<float> row_tile_attention(const AttentionCase& c, const std::string& what,
                                      cuda::AttentionScratch scratch = {}) {
  return attention_on_gpu(c, what, [&](const float* q, const float* k, const float* v, const int32_t* slot,
                                       const uint8_t* mask, const int32_t* pos, float* out) {
    cuda::attention_paths::row_tiles(q, k, v, slot, mask, pos, c.n, c.base, c.nh, c.nkv, c.hd, c.window, c.soft_cap, out, kStream,
                                     scratch);
  });
}

std::string describe(const Shape& s, const AttentionCase& c) {
  return std::string(s.name) + " base " + std::to_string(c.base) + " n " + std::to_string(c.n) +
         (c.mask.empty() ? " causal" : " tree") + (c.window ? " window " + std::to_string(c.window) : "");
}

}  // namespace

TEST_F(CudaKernels, AttentionDecodeAtLongContexts) {
  // One new row over 4k to 32k slots: the launcher splits the context (the single-block path would need 128 KiB
  // of shared memory at 32k, more than sm_86/sm_89 have).
  uint32_t seed = 500;
  for (const Shape& s : kShapes)
    for (int total : {4096, 8192, 16384, 32768}) {
      const AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, total - 1, 1, false, 0, seed += 10);
      check_attention(c, describe(s, c));
    }
}

TEST_F(CudaKernels, AttentionTreeOf16RowsAt8kAnd32k) {
  // A verification step's tree at 8k and 32k positions, with and without a sliding window that leaves whole
  // chunks of the context unseen (their partials must count for nothing).
  uint32_t seed = 550;
  for (const Shape& s : kShapes)
    for (int total : {8192, 32768})
      for (int window : {0, 4096}) {
        const AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, total - 16, 16, true, window,
                                               seed += 10);
        check_attention(c, describe(s, c));
      }
}

TEST_F(CudaKernels, AttentionSplitPathAgreesWithSingleBlockPath) {
  // At 4k slots both paths are valid (16 KiB of scores in shared memory). The split path is forced into 1 chunk
  // (no scratch, normalised in place), 3 uneven chunks (4112 slots: 65 tiles of 64, the last one partial: chunks of
  // 22, 22 and 21 tiles) and 17 chunks of 4 tiles (decode at 4k, split as launched, takes one chunk per tile); a
  // window of 1000 leaves most chunks seeing nothing, a window of 3 cuts into the tree itself.
  uint32_t seed = 650;
  for (const Shape& s : kShapes)
    for (const auto& [n, tree] : {std::pair{1, false}, std::pair{16, true}})
      for (int window : {0, 1000, 3}) {
        const AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, 4112 - n, n, tree, window, seed += 10);
        const std::string what = describe(s, c);
        const std::vector<float> single = single_block_attention(c, what + " single block");
        EXPECT_LT(max_rel_diff(single, attention_reference(c)), 1e-4) << what << " single block vs reference";
        for (int splits : {1, 3, 17})
          EXPECT_LT(max_rel_diff(split_attention(c, splits, what), single), 2e-5)
              << what << " split " << splits << " vs single block";
      }
}

TEST_F(CudaKernels, AttentionSplitPathAtOtherHeadShapes) {
  // The split path serves a block of query heads per KV head (all of them up to 8, else the largest divisor of
  // the group up to 8): groups of 3 (Llama-3.2-3B), 7 (Qwen2-0.5B), 1 (multi-head), 12 (two blocks of 6 per KV
  // head) and 16 (two of 8), and head dims that are not a multiple of 32 (80) or are small (32), each against the
  // reference, a decode row and a 16-row tree, in 1 and 5 chunks.
  struct Heads {
    int nh, nkv, hd;
  };
  uint32_t seed = 900;
  for (const Heads& h : {Heads{24, 8, 128}, Heads{14, 2, 64}, Heads{8, 8, 128}, Heads{24, 2, 128}, Heads{32, 2, 80},
                         Heads{12, 4, 32}})
    for (const auto& [n, tree] : {std::pair{1, false}, std::pair{16, true}}) {
      const AttentionCase c = attention_case(h.nh, h.nkv, h.hd, 3000 - n, n, tree, 0, seed += 10);
      const std::string what = std::to_string(h.nh) + "/" + std::to_string(h.nkv) + " heads of " +
                               std::to_string(h.hd) + ", n " + std::to_string(n);
      check_attention(c, what);
      for (int splits : {1, 5})
        EXPECT_LT(max_rel_diff(split_attention(c, splits, what), attention_reference(c)), 1e-4)
            << what << " split " << splits;
    }
}

TEST_F(CudaKernels, AttentionRowTilePathAgreesWithSingleBlockPath) {
  // The row-tile path (attention_rows.cu) on the split test's inputs at 4k slots (17 chunks of 256 slots), against
  // the single-block path: 1 row (a decode), 4 rows (one block, half its queries dead at Llama's groups of 4), 13 (a
  // partial second tile of rows) and 64, trees and causal, windows as there.
  uint32_t seed = 1650;
  for (const Shape& s : kShapes)
    for (const auto& [n, tree] : {std::pair{1, false}, std::pair{4, true}, std::pair{13, false}, std::pair{64, true}})
      for (int window : {0, 1000, 3}) {
        const AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, 4112 - n, n, tree, window, seed += 10);
        const std::string what = describe(s, c);
        const std::vector<float> single = single_block_attention(c, what + " single block");
        EXPECT_LT(max_rel_diff(row_tile_attention(c, what), single), 2e-5) << what << " row tiles vs single block";
      }
}

TEST_F(CudaKernels, AttentionRowTilePathAtOtherHeadShapes) {
  // Groups of 3 (10 rows a block, 2 of its 32 queries dead), 7, 1 (32 rows a block), 12 and 16 (two blocks per KV
  // head), head dims 80 and 32, against the reference; 4 to 64 rows, short and long contexts (one chunk, 12).
  struct Heads {
    int nh, nkv, hd;
  };
  uint32_t seed = 1900;
  for (const Heads& h : {Heads{24, 8, 128}, Heads{14, 2, 64}, Heads{8, 8, 128}, Heads{24, 2, 128}, Heads{32, 2, 80},
                         Heads{12, 4, 32}})
    for (const auto& [base, n] : {std::pair{0, 37}, std::pair{3000, 4}, std::pair{700, 64}}) {
      const AttentionCase c = attention_case(h.nh, h.nkv, h.hd, base, n, n != 37, 0, seed += 10);
      const std::string what = std::to_string(h.nh) + "/" + std::to_string(h.nkv) + " heads of " +
                               std::to_string(h.hd) + ", base " + std::to_string(base) + ", n " + std::to_string(n);
      check_attention(c, what);  // the launcher takes the row tiles from 4 rows
      EXPECT_LT(max_rel_diff(row_tile_attention(c, what), attention_reference(c)), 1e-4) << what << " row tiles";
    }
}

TEST_F(CudaKernels, AttentionRowTilesGiveARowTheSameBitsWhateverRowsShareItsBlock) {
  // A causal batch of n rows and the same batch with rows appended (the first n rows do not see them; their keys
  // and values are new): rows 0..n-1 share their blocks with other rows in the longer batch, and the appended
  // slots fall in a tile the first rows also read. At base 1,000 the longer batch of 64 rows passes 1,024 slots
  // (5 chunks) where the shorter one has one: the first rows, short, keep their context in its first chunk; at
  // 1,344 both have 6. Their outputs must be the same bits: what a tree's row gets must not depend on the rows
  // verified beside it.
  uint32_t seed = 2100;
  for (const Shape& s : kShapes)
    for (const auto& [n, more] : {std::pair{5, 11}, std::pair{8, 56}, std::pair{20, 44}})
      for (int base : {1000, 1344}) {
        const AttentionCase a = attention_case(s.heads, s.kv_heads, s.head_dim, base, n, false, 0, seed);
        const AttentionCase b = attention_case(s.heads, s.kv_heads, s.head_dim, base, n + more, false, 0, seed);
        seed += 10;
        // attention_case draws every array from its seed in order: a's are b's first elements.
        ASSERT_TRUE(std::equal(a.k.begin(), a.k.end(), b.k.begin()));
        const std::string what = describe(s, a) + " and " + std::to_string(more) + " more rows";
        const std::vector<float> alone = row_tile_attention(a, what);
        const std::vector<float> among = row_tile_attention(b, what);
        EXPECT_EQ(std::memcmp(alone.data(), among.data(), sizeof(float) * alone.size()), 0) << what;
      }
}

namespace {

// Row i of a tree case as its own decode: one new row over the earlier slots and the tree rows it sees, in order
// (its ancestors, then itself), with nothing invisible between them: what vanilla decoding computes for that token.
AttentionCase decode_of_row(const AttentionCase& c, int i) {
  const size_t kv = size_t(c.nkv) * c.hd, qw = size_t(c.nh) * c.hd;
  std::vector<int> seen;
  for (int j = 0; j < c.n; ++j)
    if (c.mask.empty() ? j <= i : c.mask[size_t(i) * c.n + j] != 0) seen.push_back(j);
  AttentionCase d;
  d.n = 1, d.base = c.base + int(seen.size()) - 1, d.nh = c.nh, d.nkv = c.nkv, d.hd = c.hd, d.window = c.window;
  d.soft_cap = c.soft_cap;
  d.q.assign(c.q.begin() + i * qw, c.q.begin() + (i + 1) * qw);
  d.k.assign(c.k.begin(), c.k.begin() + c.base * kv);
  d.v.assign(c.v.begin(), c.v.begin() + c.base * kv);
  d.slot_pos.assign(c.slot_pos.begin(), c.slot_pos.begin() + c.base);
  for (int j : seen) {
    const size_t at = size_t(c.base + j) * kv;
    d.k.insert(d.k.end(), c.k.begin() + at, c.k.begin() + at + kv);
    d.v.insert(d.v.end(), c.v.begin() + at, c.v.begin() + at + kv);
    d.slot_pos.push_back(c.slot_pos[size_t(c.base + j)]);
  }
  d.positions = {c.positions[size_t(i)]};
  d.parent = {-1};
  return d;
}

}  // namespace

TEST_F(CudaKernels, AttentionOfATreeRowIsItsOwnDecodeBitForBit) {
  // Greedy verification is lossless on the GPU only if a tree row's logits are the bits vanilla decoding computes
  // for the same token, and attention is where a tree row differs: its earlier slots are interleaved with rows it
  // does not see. Up to 1,024 slots both the row-tile path (4 rows and more) and the single-block path (decode; also
  // trees with the row tiles off) sum each row's weights and values one thread at a time in slot order, so every
  // row must come out bit for bit as its own decode does. (A first row-tile version rescaled its sums tile by tile
  // and parted from vanilla on 2-3 of 80 held-out prompts on the H200.) Past 1,024 slots (row tiles only: the split
  // path cuts its chunks by the call) each row sums in chunks of 256 by rank, its decode the same: trees that cross
  // 1,024 with short and long rows in one call (base 1,000 and 1,020), one that crosses a chunk's end at 2,048,
  // longer contexts, and a window. Causal batches too (a chain's verification, a chunk of a long prefill): each row
  // sees all of the rows before it, so past 1,024 slots short and long rows share a call the same way.
  struct TreeCase {
    int base, n, window;
    bool tiles_off_too;
    bool tree = true;  // false: causal rows, no mask
  };
  uint32_t seed = 2300;
  for (const Shape& s : kShapes)
    for (const TreeCase& t : {TreeCase{300, 4, 0, true}, TreeCase{200, 16, 0, true}, TreeCase{900, 64, 0, true},
                              TreeCase{1000, 64, 0, false}, TreeCase{1020, 16, 0, false},
                              TreeCase{2040, 16, 0, false}, TreeCase{3000, 64, 0, false}, TreeCase{8190, 8, 0, false},
                              TreeCase{3000, 16, 1000, false}, TreeCase{1020, 16, 0, false, false},
                              TreeCase{2040, 64, 0, false, false}, TreeCase{200, 16, 0, true, false}})
      for (const bool tiles : {true, false}) {
        if (!tiles && !t.tiles_off_too) continue;
        const int base = t.base, n = t.n;
        const AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, base, n, t.tree, t.window, seed += 10);
        const std::string what = describe(s, c) + (tiles ? " (row tiles)" : " (row tiles off)");
        const std::vector<float> tree =
            attention_on_gpu(c, what, [&](const float* q, const float* k, const float* v, const int32_t* slot,
                                          const uint8_t* mask, const int32_t* pos, float* out) {
              cuda::attention(q, k, v, slot, mask, pos, c.n, c.base, c.nh, c.nkv, c.hd, c.window, c.soft_cap, out, kStream,
                              {}, tiles);
            });
        const size_t row_floats = size_t(c.nh) * c.hd;
        int parted = 0;
        for (int i = 0; i < n; ++i) {
          const AttentionCase d = decode_of_row(c, i);
          const std::vector<float> alone =
              attention_on_gpu(d, what, [&](const float* q, const float* k, const float* v, const int32_t* slot,
                                            const uint8_t* mask, const int32_t* pos, float* out) {
                cuda::attention(q, k, v, slot, mask, pos, d.n, d.base, d.nh, d.nkv, d.hd, d.window, d.soft_cap, out, kStream);
              });
          parted += std::memcmp(alone.data(), tree.data() + i * row_floats, sizeof(float) * row_floats) != 0;
        }
        EXPECT_EQ(parted, 0) << what << ": rows whose attention differs from their own decode's";
        EXPECT_LT(max_rel_diff(tree, attention_reference(c)), 1e-4) << what << " vs the reference";
      }
}

TEST_F(CudaKernels, AttentionWithASoftCapOnEveryPath) {
  // Gemma 2's attn_logit_softcapping (slot_score in attention_visibility.cuh), at a cap of 2 so that it moves these
  // cases' scores: the launcher on each of its paths against the reference (a decode and a 16-row tree up to 1,024
  // slots, the row tiles and a long decode past it, with a window), the split and row-tile paths against the
  // single-block one at 4k, a tree row bit for bit its own decode, and every output far from the uncapped one.
  uint32_t seed = 3100;
  for (const Shape& s : kShapes) {
    for (const auto& [base, n, tree, window] : {std::tuple{300, 1, false, 0}, std::tuple{300, 16, true, 0},
                                               std::tuple{700, 64, false, 128}, std::tuple{5000, 1, false, 0},
                                               std::tuple{3000, 16, true, 1000}}) {
      AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, base, n, tree, window, seed += 10);
      const std::vector<float> uncapped = attention_reference(c);
      c.soft_cap = 2.f;
      const std::string what = describe(s, c) + " soft cap 2";
      check_attention(c, what);
      EXPECT_GT(max_rel_diff(attention_reference(c), uncapped), 0.1) << what << ": the cap changed nothing";
    }
    for (const auto& [n, tree] : {std::pair{1, false}, std::pair{16, true}}) {
      AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, 4112 - n, n, tree, 0, seed += 10);
      c.soft_cap = 2.f;
      const std::string what = describe(s, c) + " soft cap 2";
      const std::vector<float> single = single_block_attention(c, what + " single block");
      EXPECT_LT(max_rel_diff(single, attention_reference(c)), 1e-4) << what << " single block";
      EXPECT_LT(max_rel_diff(split_attention(c, 3, what), single), 2e-5) << what << " split vs single block";
      EXPECT_LT(max_rel_diff(row_tile_attention(c, what), single), 2e-5) << what << " row tiles vs single block";
    }
    AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, 900, 16, true, 0, seed += 10);
    c.soft_cap = 2.f;
    const std::vector<float> tree = row_tile_attention(c, "soft-capped tree");
    const size_t row_floats = size_t(c.nh) * c.hd;
    for (int i = 0; i < c.n; ++i) {
      const AttentionCase d = decode_of_row(c, i);
      const std::vector<float> alone = single_block_attention(d, "soft-capped decode");
      EXPECT_EQ(std::memcmp(alone.data(), tree.data() + i * row_floats, sizeof(float) * row_floats), 0)
          << s.name << " soft-capped tree row " << i << " differs from its own decode";
    }
  }
}

TEST_F(CudaKernels, AttentionWithWideHeadsAtEveryContext) {
  // Heads of 256 (Gemma 2 2B: 8 heads on 4 KV heads; Gemma 3 1B: 4 on 1) take the single-block path at every context
  // (attention_paths.h, kMaxWideHeadDim): the launcher against the reference from a short decode to past the row
  // tiles' 1,024 slots and far past, with Gemma's sliding window and soft cap; and every tree row bit for bit its own
  // decode there too, which one path for every call is for.
  const Shape gemma2{"Gemma-2-2B", 2304, 8, 4, 256, 9216}, gemma3{"Gemma-3-1B", 1152, 4, 1, 256, 6912};
  const int most = cuda::attention_paths::single_block_max_slots();
  ASSERT_GE(most, 8192 + 16) << "a device whose shared memory holds fewer scores than these cases need";
  uint32_t seed = 3500;
  for (const Shape& s : {gemma2, gemma3}) {
    for (const auto& [base, n, tree, window, cap] :
         {std::tuple{300, 1, false, 0, 0.f}, std::tuple{300, 16, true, 0, 50.f}, std::tuple{2000, 1, false, 512, 0.f},
          std::tuple{2000, 64, false, 0, 0.f}, std::tuple{8190, 16, true, 512, 50.f}}) {
      AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, base, n, tree, window, seed += 10);
      c.soft_cap = cap;
      const std::string what = describe(s, c) + (cap > 0.f ? " soft cap 50" : "");
      const std::vector<float> got =
          attention_on_gpu(c, what, [&](const float* q, const float* k, const float* v, const int32_t* slot,
                                        const uint8_t* mask, const int32_t* pos, float* out) {
            cuda::attention(q, k, v, slot, mask, pos, c.n, c.base, c.nh, c.nkv, c.hd, c.window, c.soft_cap, out,
                            kStream);
          });
      EXPECT_LT(max_rel_diff(got, attention_reference(c)), 1e-4) << what;
      if (n == 1) continue;
      const size_t row_floats = size_t(c.nh) * c.hd;
      int parted = 0;
      for (int i = 0; i < n; i += (n > 16 ? 7 : 1)) {
        const AttentionCase d = decode_of_row(c, i);
        const std::vector<float> alone =
            attention_on_gpu(d, what, [&](const float* q, const float* k, const float* v, const int32_t* slot,
                                          const uint8_t* mask, const int32_t* pos, float* out) {
              cuda::attention(q, k, v, slot, mask, pos, d.n, d.base, d.nh, d.nkv, d.hd, d.window, d.soft_cap, out,
                              kStream);
            });
        parted += std::memcmp(alone.data(), got.data() + i * row_floats, sizeof(float) * row_floats) != 0;
      }
      EXPECT_EQ(parted, 0) << what << ": rows whose attention differs from their own decode's";
    }
  }
}

TEST_F(CudaKernels, AttentionTreeMasksOf1To64Rows) {
  uint32_t seed = 600;
  for (const Shape& s : kShapes)
    for (int n : {1, 2, 5, 16, 33, 64}) {
      const AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, 2048, n, true, 0, seed += 10);
      check_attention(c, describe(s, c));
    }
}

TEST_F(CudaKernels, AttentionCausalPrefillAndSlidingWindow) {
  uint32_t seed = 700;
  for (const Shape& s : kShapes) {
    for (int base : {0, 3000}) {
      const AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, base, 64, false, 0, seed += 10);
      check_attention(c, describe(s, c));
    }
    // A window that cuts into the earlier slots, and one that cuts into the tree itself.
    for (int window : {1024, 3}) {
      const AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, 3000, 16, true, window, seed += 10);
      check_attention(c, describe(s, c));
    }
  }
}

TEST(AttentionPaths, TheContextsScratchFitsEverySplitTheLauncherPicks) {
  // Host arithmetic only, so it runs without a GPU: for every head layout (groups of 1 to 16 query heads per KV
  // head), 1 to 256 rows and contexts past the split threshold to 32k slots, the split path's partials in
  // split_count's chunks fit split_scratch_floats, and the row tiles' partials of at least one row (the launcher
  // calls with as many rows as fit) fit attention_scratch_floats, which CudaContext allocates once for its context.
  // A broken bound would make the launcher throw on the GPU rather than allocate inside a graph.
  struct Heads { int nh, nkv; };
  for (const Heads h : {Heads{6, 2}, Heads{32, 8}, Heads{32, 32}, Heads{28, 4}, Heads{64, 4}, Heads{40, 5}})
    for (int hd : {64, 128})
      for (int total = cuda::attention_paths::kSplitAboveSlots + 1; total <= 32768; total += 997) {
        const int chunks = cuda::attention_paths::canonical_chunks(total);
        ASSERT_GE(cuda::attention_scratch_floats(h.nh, hd, total),
                  8 * cuda::attention_paths::split_partials_floats(1, h.nh, chunks, hd))
            << "row tiles nh " << h.nh << " hd " << hd << " slots " << total;
        ASSERT_GE(cuda::attention_scratch_floats(h.nh, hd, total), cuda::attention_paths::split_scratch_floats(hd));
        for (int n = 1; n <= 256; ++n) {
          const int chunks = cuda::attention_paths::split_count(n, h.nh, h.nkv, total);
          if (chunks == 1) continue;  // one chunk writes the output directly, with no scratch
          ASSERT_LE(cuda::attention_paths::split_partials_floats(n, h.nh, chunks, hd),
                    cuda::attention_paths::split_scratch_floats(hd))
              << "split nh " << h.nh << " nkv " << h.nkv << " hd " << hd << " rows " << n << " slots " << total;
        }
      }
}

namespace {

// The row tiles' chunk plan (attention_paths.h) walked on the host as rows_partial_k walks it: for new row i of a
// call over `base` earlier slots and n new ones (mask [n][n], empty: causal), the keys each chunk sums, in order,
// named by what they are (an earlier slot j as j, new row k's as kNewKey + k), with the window by position (a
// prefix slot's position its index, a new row's base + its depth: `depth`, the count of new rows it sees).
constexpr int kNewKey = 1 << 20;
std::vector<std::vector<int>> keys_by_chunk(int base, int n, const std::vector<uint8_t>& mask, int i, int window,
                                            const std::vector<int>& depth) {
  namespace ap = cuda::attention_paths;
  auto seen = [&](int k) { return mask.empty() ? k <= i : mask[size_t(i) * n + k] != 0; };
  int tree_seen = 0;
  for (int k = 0; k < n; ++k) tree_seen += seen(k);
  const bool long_row = ap::is_long_row(base, tree_seen);
  const int chunks = ap::canonical_chunks(base + n), row_pos = base + depth[size_t(i)];
  std::vector<std::vector<int>> out(static_cast<size_t>(chunks));
  for (int z = 0; z < chunks; ++z) {
    const ap::ChunkWalk w = ap::chunk_walk(z, chunks, base, n);
    std::vector<int> slots;
    for (int j = w.prefix_lo; j < w.prefix_hi; ++j) slots.push_back(j);
    if (w.tree_too)
      for (int j = base; j < base + n; ++j) slots.push_back(j);
    for (int j : slots) {
      const bool in_tree = j >= base;
      const int k = j - base;
      if (in_tree && !seen(k)) continue;
      const int pos = in_tree ? base + depth[size_t(k)] : j;
      if (window > 0 && row_pos - pos >= window) continue;
      int rank = j;
      if (in_tree) {
        rank = base;
        for (int kk = 0; kk < k; ++kk) rank += seen(kk);
      }
      if (chunks > 1 && ap::chunk_of_rank(rank, long_row) != z) continue;
      out[size_t(z)].push_back(in_tree ? kNewKey + k : j);
    }
  }
  while (!out.empty() && out.back().empty()) out.pop_back();  // trailing empty chunks add nothing to the fold
  return out;
}

}  // namespace

TEST(AttentionPaths, EveryTreeRowsChunksHoldItsDecodesKeysInOrder) {
  // Host only, so it runs without a GPU: the plan the row tiles follow past 1,024 slots. For random trees around
  // the 1,024-slot threshold, a chunk's end (2,048) and a long context, with and without a window, every row's
  // chunks in the tree's call must hold exactly the keys its own decode's call sums in the same chunks, in the same
  // order (the decode: one new row after the prefix and the tree rows the row sees, moved together), and every key
  // the row sees must be summed once. With the two passes and the in-order fold, equal key sequences per chunk are
  // equal bits (the kernel tests hold that on a GPU).
  std::mt19937 rng(3100);
  int rows_checked = 0, long_rows = 0, split_trees = 0;
  for (int base_lo : {0, 900, 1000, 1010, 1020, 2000, 2040, 8180})
    for (int rep = 0; rep < 12; ++rep) {
      const int n = 1 + int(rng() % 64), base = base_lo + int(rng() % 40);
      const int window = rep % 3 == 0 ? 0 : rep % 3 == 1 ? 300 : 1500;
      std::vector<int> parent(static_cast<size_t>(n)), depth(static_cast<size_t>(n));
      std::vector<uint8_t> mask(size_t(n) * n, 0);
      for (int k = 0; k < n; ++k) {
        parent[size_t(k)] = k == 0 ? -1 : int(rng() % size_t(k + 1)) - 1;
        depth[size_t(k)] = parent[size_t(k)] < 0 ? 0 : depth[size_t(parent[size_t(k)])] + 1;
        for (int a = k; a >= 0; a = parent[size_t(a)]) mask[size_t(k) * n + a] = 1;
      }
      for (const bool causal : {false, true}) {
        std::vector<int> causal_depth(static_cast<size_t>(n));
        for (int k = 0; k < n; ++k) causal_depth[size_t(k)] = k;
        const std::vector<uint8_t> m = causal ? std::vector<uint8_t>{} : mask;
        const std::vector<int>& d = causal ? causal_depth : depth;
        for (int i = 0; i < n; ++i) {
          const std::vector<std::vector<int>> tree = keys_by_chunk(base, n, m, i, window, d);
          // Its decode: the row's visible new rows, before it, moved to the slots after the prefix.
          std::vector<int> seen;
          for (int k = 0; k < n; ++k)
            if (m.empty() ? k <= i : m[size_t(i) * n + k] != 0) seen.push_back(k);
          ASSERT_EQ(seen.back(), i);
          const int decode_base = base + int(seen.size()) - 1;
          // Its row sits at slot decode_base, at depth 0 of its one-row call: position decode_base = base + its
          // depth in the tree. An earlier slot's position is its index: a moved row at base + r has depth r.
          ASSERT_EQ(decode_base, base + d[size_t(i)]);
          std::vector<std::vector<int>> decode = keys_by_chunk(decode_base, 1, {}, 0, window, {0});
          // The decode names its keys by its own slots; past the prefix they are the moved tree rows.
          for (auto& chunk : decode)
            for (int& key : chunk)
              key = key >= kNewKey ? kNewKey + i : key >= base ? kNewKey + seen[size_t(key - base)] : key;
          EXPECT_EQ(tree, decode) << "base " << base << " n " << n << " row " << i << (causal ? " causal" : " tree")
                                  << " window " << window;
          size_t keys = 0;
          for (const auto& chunk : tree) keys += chunk.size();
          std::vector<int> all;
          for (const auto& chunk : tree) all.insert(all.end(), chunk.begin(), chunk.end());
          std::sort(all.begin(), all.end());
          EXPECT_TRUE(std::adjacent_find(all.begin(), all.end()) == all.end()) << "a key summed twice";
          // And none left out: the keys the row sees at all (its window by position).
          size_t visible = 0;
          const int row_pos = base + d[size_t(i)];
          for (int j = 0; j < base; ++j) visible += window == 0 || row_pos - j < window;
          for (int k : seen) visible += window == 0 || row_pos - (base + d[size_t(k)]) < window;
          EXPECT_EQ(keys, visible) << "base " << base << " n " << n << " row " << i << " window " << window;
          ++rows_checked;
          long_rows += decode_base + 1 > cuda::attention_paths::kSplitAboveSlots;
          split_trees += tree.size() > 1 && keys > 0;
        }
      }
    }
  EXPECT_GT(long_rows, 1000);  // the cases reach the chunked plan, not only the one-chunk path
  EXPECT_GT(rows_checked - long_rows, 1000);
  EXPECT_GT(split_trees, 500);
}

TEST_F(CudaKernels, AttentionSplitIntoTheCallersScratchIsBitIdentical) {
  // CudaContext hands the launcher one buffer of attention_scratch_floats(nh, hd, n_ctx) floats (no allocation a
  // CUDA graph would capture): it must fit every call the launcher makes, for one row up to 64, and give the very
  // bits of the stream-ordered allocation's path, in which the row tiles take all rows in one call (at 8k, 64 rows
  // go in calls of 8 through the scratch), and the split path's with the row tiles off.
  uint32_t seed = 700;
  for (const Shape& s : kShapes) {
    const size_t floats = cuda::attention_scratch_floats(s.heads, s.head_dim, 8192);
    DeviceArray<float> scratch(floats);
    for (auto [total, n] : {std::pair{2048, 1}, std::pair{8192, 1}, std::pair{4096, 8}, std::pair{3000, 64},
                            std::pair{8192, 64}})
      for (const bool tiles : {true, false}) {
        const AttentionCase c = attention_case(s.heads, s.kv_heads, s.head_dim, total - n, n, n > 1, 0, seed += 10);
        const std::string what = describe(s, c) + (tiles ? " (row tiles)" : " (row tiles off)");
        auto run = [&](cuda::AttentionScratch given) {
          return attention_on_gpu(c, what, [&](const float* q, const float* k, const float* v, const int32_t* slot,
                                               const uint8_t* mask, const int32_t* pos, float* out) {
            cuda::attention(q, k, v, slot, mask, pos, c.n, c.base, c.nh, c.nkv, c.hd, c.window, c.soft_cap, out, kStream, given,
                            tiles);
          });
        };
        const std::vector<float> allocated = run({}), given = run({scratch.get(), floats});
        EXPECT_EQ(std::memcmp(allocated.data(), given.data(), sizeof(float) * given.size()), 0) << what;
        EXPECT_LT(max_rel_diff(given, attention_reference(c)), 1e-4) << what;
      }
  }
}

TEST_F(CudaKernels, AttentionGivesZerosToARowThatSeesNothing) {
  // Short: the single-block path.
  AttentionCase c = attention_case(kLlama1B.heads, kLlama1B.kv_heads, kLlama1B.head_dim, 0, 4, true, 0, 800);
  std::fill(c.mask.begin() + 2 * 4, c.mask.begin() + 3 * 4, 0);  // row 2 sees no slot at all
  check_attention(c, "a row with an empty mask");
  // Long: the split path, where every chunk of that row sees nothing (a window of 1 hides every earlier slot).
  AttentionCase l = attention_case(kLlama1B.heads, kLlama1B.kv_heads, kLlama1B.head_dim, 3000, 16, true, 1, 810);
  std::fill(l.mask.begin() + 2 * 16, l.mask.begin() + 3 * 16, 0);
  check_attention(l, "a row with an empty mask and a window of 1 over 3016 slots");
  for (int splits : {1, 3}) {
    const std::vector<float> got = split_attention(l, splits, "split " + std::to_string(splits));
    EXPECT_TRUE(std::all_of(got.begin() + 2 * l.nh * l.hd, got.begin() + 3 * l.nh * l.hd,
                            [](float f) { return f == 0.f; }))
        << "split " << splits << ": the row that sees nothing is not all zeros";
  }
}

namespace {

// A case's summaries and probe probabilities: from the host's summarize_logits (the reference), or from the kernel.
struct Summaries {
  std::vector<LogitSummary> rows;
  std::vector<float> probes;
};
Summaries summaries_reference(const SummaryCase& c) {
  Summaries want{std::vector<LogitSummary>(static_cast<size_t>(c.rows)), std::vector<float>(c.probe_tokens.size())};
  cuda::ref::logit_summaries(c.logits.data(), c.rows, c.vocab, c.probe_start.data(), c.probe_tokens.data(),
                             want.rows.data(), want.probes.data());
  return want;
}
// chunked: logit_summaries_chunked (two launches over chunks of the row) instead of the one-block launcher.
Summaries summaries_on_gpu(const SummaryCase& c, bool chunked = false) {
  DeviceArray<float> logits(c.logits);
  DeviceArray<int32_t> start(c.probe_start), tokens(c.probe_tokens);
  DeviceArray<LogitSummary> sums(static_cast<size_t>(c.rows));
  DeviceArray<float> probes(c.probe_tokens.size());
  if (chunked) {
    DeviceArray<uint8_t> scratch(cuda::summary_scratch_bytes(c.rows, c.vocab));
    cuda::logit_summaries_chunked(logits.get(), c.rows, c.vocab, start.get(), tokens.get(), sums.get(), probes.get(),
                                  scratch.get(), kStream);
    return {sums.to_host(), probes.to_host()};
  }
  cuda::logit_summaries(logits.get(), c.rows, c.vocab, start.get(), tokens.get(), sums.get(), probes.get(), kStream);
  return {sums.to_host(), probes.to_host()};
}

}  // namespace

TEST_F(CudaKernels, LogitSummariesAtLlamaVocabularies) {
  // Llama-2's 32000 and Llama-3's 128256 tokens; one row (decode), a tree of 8 and of 64 rows. Probabilities within
  // 3e-5 (relative): the reference's normalizer, 16 float running sums of ~8k terms each at 128256 tokens, was
  // measured up to 6.4e-6 below a double-precision sum (2e-5 at Qwen2's 151936), where the device's 256-way sum is
  // within 1e-6; a wrong normalizer or term is off by far more.
  // Both launches: one block a row, and the chunked path (vocabularies past a whole chunk, and 5000: a short last
  // chunk).
  uint32_t seed = 900;
  for (bool chunked : {false, true})
  for (int vocab : {32000, 128256, 5000})
    for (int rows : {1, 8, 64}) {
      const SummaryCase c = summary_case(rows, vocab, 10, seed += 10);
      const std::string what = std::to_string(rows) + " rows of " + std::to_string(vocab) + (chunked ? ", chunked" : "");
      const Summaries reference = summaries_reference(c), device = summaries_on_gpu(c, chunked);
      const std::vector<LogitSummary>& got = device.rows;
      const std::vector<LogitSummary>& want = reference.rows;
      const std::vector<float>& got_probes = device.probes;
      const std::vector<float>& want_probes = reference.probes;
      for (int r = 0; r < rows; ++r) {
        const LogitSummary &g = got[size_t(r)], &w = want[size_t(r)];
        EXPECT_EQ(g.argmax, w.argmax) << what << ", row " << r;
        EXPECT_NEAR(g.argmax_prob, w.argmax_prob, 3e-5 * w.argmax_prob) << what << ", row " << r;
        ASSERT_EQ(g.top_count, w.top_count) << what << ", row " << r;
        for (int t = 0; t < w.top_count; ++t) {
          EXPECT_EQ(g.top_ids[t], w.top_ids[t]) << what << ", row " << r << ", bar " << t;
          EXPECT_NEAR(g.top_probs[t], w.top_probs[t], 3e-5 * w.argmax_prob) << what << ", row " << r;
        }
      }
      for (size_t j = 0; j < got_probes.size(); ++j)
        EXPECT_NEAR(got_probes[j], want_probes[j], 3e-5 * std::max(want_probes[j], 1e-30f)) << what << ", probe " << j;
    }
}

TEST_F(CudaKernels, LogitSummariesOfARowOfMinusInfinityAreZerosAsOnTheHost) {
  // A row every token of which is masked to -inf: the host's softmax gives zeros (no NaN), so the summary is the
  // argmax at probability 0 with no bars, and every probe 0; the rows around it are unaffected.
  const int rows = 3, vocab = 4096;
  SummaryCase c = summary_case(rows, vocab, 6, 990);
  std::fill(c.logits.begin() + vocab, c.logits.begin() + 2 * vocab, -std::numeric_limits<float>::infinity());
  for (bool chunked : {false, true}) {
  SCOPED_TRACE(chunked ? "chunked" : "one block a row");
  const Summaries reference = summaries_reference(c), device = summaries_on_gpu(c, chunked);
  const std::vector<LogitSummary>& got = device.rows;
  const std::vector<LogitSummary>& want = reference.rows;
  const std::vector<float>& got_probes = device.probes;
  ASSERT_EQ(want[1].argmax_prob, 0.f) << "the reference's own reading of the row";
  for (int r = 0; r < rows; ++r) {
    EXPECT_EQ(got[size_t(r)].argmax, want[size_t(r)].argmax) << "row " << r;
    EXPECT_EQ(got[size_t(r)].top_count, want[size_t(r)].top_count) << "row " << r;
    EXPECT_NEAR(got[size_t(r)].argmax_prob, want[size_t(r)].argmax_prob, 3e-5) << "row " << r;
  }
  for (int j = c.probe_start[1]; j < c.probe_start[2]; ++j) EXPECT_EQ(got_probes[size_t(j)], 0.f) << "probe " << j;
  }
}

TEST_F(CudaKernels, LogitSummariesOfANaNFirstLogitGiveTheHostsArgmax) {
  // The host's argmax keeps id 0 when its logit is NaN (no logit is larger than NaN); a NaN elsewhere is never the
  // argmax. The device must answer both rows as the host does, and leave the row after them alone.
  const int rows = 3, vocab = 4096;
  SummaryCase c = summary_case(rows, vocab, 6, 991);
  c.logits[0] = std::numeric_limits<float>::quiet_NaN();
  c.logits[size_t(vocab) + 17] = std::numeric_limits<float>::quiet_NaN();
  for (bool chunked : {false, true}) {
  SCOPED_TRACE(chunked ? "chunked" : "one block a row");
  const Summaries reference = summaries_reference(c), device = summaries_on_gpu(c, chunked);
  ASSERT_EQ(reference.rows[0].argmax, 0) << "the reference's own reading of the row";
  ASSERT_NE(reference.rows[1].argmax, 17);
  // Only the argmax is compared in the NaN rows: their probabilities are NaN arithmetic on both sides.
  for (int r = 0; r < rows; ++r) EXPECT_EQ(device.rows[size_t(r)].argmax, reference.rows[size_t(r)].argmax) << "row " << r;
  EXPECT_EQ(device.rows[2].top_count, reference.rows[2].top_count);
  EXPECT_NEAR(device.rows[2].argmax_prob, reference.rows[2].argmax_prob, 3e-5);
  }
}

TEST_F(CudaKernels, ProcessedRowsMatchProcessLogits) {
  // A row processed where it is (kernels/processed_rows.cu) against process_logits: the same kept tokens in the same
  // order, probabilities within 1e-6 of the largest (CUDA's exp against libm, and the mass outside the candidates
  // added as one sum). Peaked rows, as a language model's are, must be answered; flat ones may be declined (-1), and
  // then the host processes them. Rows on a grid of 0.25 put ties at top-k's boundary.
  struct Config { float t; int k; float p; float min_p; bool peaked_must_answer; };
  const Config configs[] = {{0.8f, 40, 1.f, 0.f, true},   {0.8f, 0, 0.95f, 0.f, true}, {1.f, 0, 1.f, 0.05f, true},
                            {0.7f, 40, 0.9f, 0.05f, true}, {1.3f, 300, 0.99f, 0.f, true}, {0.8f, 0, 1.f, 0.f, false},
                            // top-k above any vocabulary (off, as on the host) and the kernel's 2048 cap; top-p a
                            // hair under 1 (its bound may need more candidates than the cap: a decline is allowed)
                            {0.8f, 200000, 0.95f, 0.f, true}, {0.9f, 5000, 1.f, 0.f, false},
                            {1.f, 0, 0.999999f, 0.f, false}};
  auto row = std::make_unique<cuda::ProcessedRow>(), want = std::make_unique<cuda::ProcessedRow>();
  DeviceArray<cuda::ProcessedRow> dout(1);
  uint32_t seed = 1200;
  for (int vocab : {2000, 32000, 128256, 151936})  // ... and Qwen2's
    for (int shape = 0; shape < 3; ++shape) {  // 0: peaked, 1: flat, 2: peaked on a grid (ties)
      std::mt19937 gen(seed++);
      std::normal_distribution<float> g(0.f, shape == 1 ? 3.f : 1.5f);
      std::vector<float> x(static_cast<size_t>(vocab));
      for (auto& v : x) v = g(gen);
      if (shape != 1)
        for (int i = 0; i < 6; ++i) x[gen() % unsigned(vocab)] += 16.f - 2.f * float(i);
      if (shape == 2)
        for (auto& v : x) v = std::round(v * 4.f) / 4.f;
      DeviceArray<float> dx(x);
      for (const Config& c : configs) {
        const std::string what = "vocab " + std::to_string(vocab) + " shape " + std::to_string(shape) + " T=" +
                                 std::to_string(c.t) + " k=" + std::to_string(c.k) + " p=" + std::to_string(c.p) +
                                 " min_p=" + std::to_string(c.min_p);
        cuda::process_row(dx.get(), vocab, c.t, c.k, c.p, c.min_p, dout.get(), kStream);
        *row = dout.to_host()[0];
        cuda::ref::process_row(x.data(), vocab, c.t, c.k, c.p, c.min_p, want.get());
        if (row->count < 0) {
          EXPECT_FALSE(shape != 1 && c.peaked_must_answer && want->count >= 0) << what << ": declined";
          continue;
        }
        ASSERT_EQ(row->count, want->count) << what;
        for (int i = 0; i < row->count; ++i) {
          ASSERT_EQ(row->ids[i], want->ids[i]) << what << ", rank " << i;
          EXPECT_NEAR(row->probs[i], want->probs[i], 1e-6 * want->probs[0]) << what << ", rank " << i;
        }
      }
    }
  // Temperature alone over a vocabulary larger than the cap is always declined; at or under it, always answered.
  std::vector<float> x(4096, 0.5f);
  DeviceArray<float> dx(x);
  cuda::process_row(dx.get(), 4096, 0.8f, 0, 1.f, 0.f, dout.get(), kStream);
  EXPECT_EQ(dout.to_host()[0].count, -1);
  cuda::process_row(dx.get(), cuda::kProcessedRowCap, 0.8f, 0, 1.f, 0.f, dout.get(), kStream);
  EXPECT_EQ(dout.to_host()[0].count, cuda::kProcessedRowCap);
}
