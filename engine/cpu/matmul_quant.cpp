#include "engine/cpu/matmul_quant.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <cstring>
#include <vector>

#include "engine/cpu/matmul.h"
#include "engine/cpu/matmul_kernels.h"
#include "engine/cpu/quant_dot.h"
#include "engine/cpu/quant_int8.h"
#include "engine/cpu/thread_pool.h"
#include "engine/formats/gguf_quant.h"
#include "engine/util/dtype.h"
#include "engine/util/error.h"

namespace specscope::cpu {

namespace {

GgmlType ggml_of(DType t) {
  switch (t) {
    case DType::Q8_0: return GgmlType::Q8_0;
    case DType::Q4_0: return GgmlType::Q4_0;
    case DType::Q4_1: return GgmlType::Q4_1;
    case DType::Q5_0: return GgmlType::Q5_0;
    case DType::Q5_1: return GgmlType::Q5_1;
    case DType::Q4_K: return GgmlType::Q4_K;
    case DType::Q5_K: return GgmlType::Q5_K;
    case DType::Q6_K: return GgmlType::Q6_K;
    case DType::MXFP4: return GgmlType::MXFP4;
    default: throw std::invalid_argument("not a block-quantized dtype: " + std::string(dtype_name(t)));
  }
}

}  // namespace

int block_weight_dims(const TensorView& W, const char* what, int* k) {
  SPEC_INPUT_CHECK(dtype_is_block(W.dtype), W.name, std::string(what) + ": not a block-quantized weight");
  SPEC_INPUT_CHECK(W.shape.size() == 2, W.name, std::string(what) + ": weight must be 2-D, got " + W.shape_str());
  SPEC_INPUT_CHECK(W.shape[0] >= 0 && W.shape[1] >= 0 && W.shape[0] <= INT_MAX && W.shape[1] <= INT_MAX, W.name,
                   std::string(what) + ": bad weight shape " + W.shape_str());
  SPEC_INPUT_CHECK(W.shape[1] % dtype_block_elems(W.dtype) == 0, W.name,
                   std::string(what) + ": row length " + std::to_string(W.shape[1]) + " is not a multiple of the " +
                       std::string(dtype_name(W.dtype)) + " block");
  SPEC_INPUT_CHECK(W.data != nullptr || W.numel() == 0, W.name, std::string(what) + ": weight has no data");
  *k = int(W.shape[1]);
  return int(W.shape[0]);
}

namespace {

#if defined(__x86_64__) && !defined(__clang__) && !defined(SPECSCOPE_NO_TARGET_CLONES)
#define SPEC_MULTIVERSION __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define SPEC_MULTIVERSION
#endif

// One block of the 32-element nibble formats, as ggml's reference dequantizes it. The four share a layout:
// f16 d, then f16 m if kMin (Q4_1, Q5_1), then 4 bytes of fifth bits if k5 (Q5_0, Q5_1), then 16 bytes with
// element j in the low nibble of byte j and element j + 16 in its high nibble. Without a min the code is centred
// (q - 8 or q - 16) and x = q * d is one exact product; with one x = q * d + m, where q * d is exact (at most 5 x 11
// bits) so the addition is the only rounding, the same whether or not a compiler fuses it into an FMA. Never add
// m = 0 to the centred types instead: that would turn their -0.0 (a zero code times a negative d) into +0.0.
template <bool kMin, bool k5>
[[gnu::always_inline]] inline void dequant_nibble_block(const uint8_t* blk, float* o) {
  uint16_t h;
  std::memcpy(&h, blk, 2);
  const float d = f16_to_f32(h);
  float m = 0.f;
  if constexpr (kMin) {
    std::memcpy(&h, blk + 2, 2);
    m = f16_to_f32(h);
  }
  const uint8_t* p = blk + (kMin ? 4 : 2);
  uint32_t qh = 0;
  if constexpr (k5) {
    qh = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;  // little-endian
    p += 4;
  }
  constexpr int kOffset = kMin ? 0 : (k5 ? 16 : 8);
#pragma omp simd
  for (int j = 0; j < 16; ++j) {
    int q0 = p[j] & 0x0F, q1 = p[j] >> 4;
    if constexpr (k5) {
      q0 |= int((qh >> j) & 1u) << 4;
      q1 |= int((qh >> (j + 16)) & 1u) << 4;
    }
    if constexpr (kMin) {
      o[j] = float(q0) * d + m;
      o[j + 16] = float(q1) * d + m;
    } else {
      o[j] = float(q0 - kOffset) * d;
      o[j + 16] = float(q1 - kOffset) * d;
    }
  }
}

template <bool kMin, bool k5>
[[gnu::always_inline]] inline void dequant_nibble_row(const uint8_t* src, float* dst, int k) {
  constexpr size_t kBlockBytes = 2 + (kMin ? 2 : 0) + (k5 ? 4 : 0) + 16;
  for (int b = 0; b < k / 32; ++b) dequant_nibble_block<kMin, k5>(src + size_t(b) * kBlockBytes, dst + size_t(b) * 32);
}

// One row, as ggml's reference dequantizes it. For Q8_0 and the 32-element nibble formats every value is one
// exact product, or an exact product plus the block's min (see above), so these vectorizable loops give the
// reference's values bit for bit; the K-quants go through the reference itself. Compiled for AVX-512, AVX2 and
// baseline, picked at load time.
SPEC_MULTIVERSION
void dequant_row(DType t, const uint8_t* src, float* dst, int k) {
  switch (t) {
    case DType::Q8_0:
      for (int b = 0; b < k / 32; ++b) {
        const uint8_t* blk = src + size_t(b) * 34;  // f16 d, int8 q[32]
        uint16_t h;
        std::memcpy(&h, blk, 2);
        const float d = f16_to_f32(h);
        const int8_t* q = reinterpret_cast<const int8_t*>(blk + 2);
        float* o = dst + size_t(b) * 32;
#pragma omp simd
        for (int j = 0; j < 32; ++j) o[j] = float(q[j]) * d;
      }
      return;
    case DType::Q4_0: return dequant_nibble_row<false, false>(src, dst, k);
    case DType::Q4_1: return dequant_nibble_row<true, false>(src, dst, k);
    case DType::Q5_0: return dequant_nibble_row<false, true>(src, dst, k);
    case DType::Q5_1: return dequant_nibble_row<true, true>(src, dst, k);
    default: return dequantize_row(ggml_of(t), src, dst, k);
  }
}

SPEC_MULTIVERSION
float dot(const float* a, const float* b, int k) {
  float acc = 0.f;
#pragma omp simd reduction(+ : acc)
  for (int i = 0; i < k; ++i) acc += a[i] * b[i];
  return acc;
}

// Four weight rows (w, w + k, w + 2k, w + 3k) against one token: x is read once for all four.
SPEC_MULTIVERSION
void dot4(const float* w, int k, const float* x, float* out) {
  const float *w0 = w, *w1 = w + k, *w2 = w + 2 * size_t(k), *w3 = w + 3 * size_t(k);
  float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
#pragma omp simd reduction(+ : a0, a1, a2, a3)
  for (int i = 0; i < k; ++i) {
    const float xi = x[i];
    a0 += w0[i] * xi;
    a1 += w1[i] * xi;
    a2 += w2[i] * xi;
    a3 += w3[i] * xi;
  }
  out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3;
}

// From this many tokens on, panels of kPanelRows dequantized rows go to the f32 tiled kernels.
constexpr int kPanelMinTokens = 3;  // measured: equal at 2-3 tokens, the panel path 1.5x slower at 1
constexpr int kPanelRows = 16;

// Below this many multiply-adds a fork costs more than it saves.
constexpr size_t kMinParallelMacs = size_t(1) << 18;

// The fused AVX-512 kernels (quant_dot.h) for this type, if they have one and linear() runs its AVX-512 kernels
// (matmul.cpp only selects them after its run-time CPU check; set_isa() can turn them off for tests).
bool fused_type(DType t, detail::QuantDotType* out) {
  if (std::strcmp(active_isa(), "avx512") != 0) return false;
  switch (t) {
    case DType::Q8_0: *out = detail::QuantDotType::Q8_0; return true;
    case DType::Q4_0: *out = detail::QuantDotType::Q4_0; return true;
    case DType::Q4_K: *out = detail::QuantDotType::Q4_K; return true;
    case DType::Q5_K: *out = detail::QuantDotType::Q5_K; return true;
    case DType::Q6_K: *out = detail::QuantDotType::Q6_K; return true;
    default: return false;
  }
}

// Up to this many tokens the fused kernels beat widening rows to f32 (measured on the 60M-parameter synthetic
// Llama, bench/make_synthetic_llama.py: see README).
constexpr int kFusedMaxTokens = 8;

}  // namespace

void linear_quant(const float* X, int n, const TensorView& W, const float* bias, float* Y) {
  int k = 0;
  const int m = block_weight_dims(W, "linear", &k);
  if (n <= 0 || m == 0) return;
  detail::Int8Type int8;
  if (!quant_exact() && detail::int8_type(W.dtype, &int8)) return detail::linear_int8(int8, X, n, W, bias, Y);
  // The exact path: weights widened to f32 (exactly), products in f32.
  const size_t rb = dtype_row_bytes(W.dtype, k);
  const auto* base = static_cast<const uint8_t*>(W.data);
  const size_t macs = size_t(m) * size_t(k) * size_t(n);
  // Outside a sequence's first forward only the panel path (the tiled f32 kernels, which sum the same way for
  // any number of tokens) keeps each row's bits independent of the batch around it.
  const bool variant = BatchVariantKernels::allowed();
  detail::QuantDotType fused;
  if (variant && n <= kFusedMaxTokens && k > 0 && fused_type(W.dtype, &fused)) {
    // Few tokens: weights widened in registers and used at once; contiguous ranges of rows shared out among the
    // team (run_team_units), each streaming its part of W once for all n tokens.
    const int units = (m + 3) / 4;
    run_team_units(units, macs, kMinParallelMacs, [&](int u0, int u1) {
      detail::quant_dot_rows_avx512(fused, base, rb, k, X, n, bias, Y, m, u0 * 4, std::min(m, u1 * 4));
    });
    return;
  }
  if ((n >= kPanelMinTokens || !variant) && k > 0) {
    // Several tokens: dequantize a panel of rows to f32 and let matmul.cpp's register-tiled f32 kernel (the one
    // linear() would use now) compute that panel for all tokens. Its Y row stride is m, so pointing Y and bias
    // at the panel's first row makes it write exactly the panel's outputs.
    const detail::RowsFn rows_fn = detail::active_rows();
    const int panels = (m + kPanelRows - 1) / kPanelRows;
    run_team_units(panels, macs, kMinParallelMacs, [&](int p0, int p1) {
      // Each member's own buffers (thread_local inside the lambda), kept from claim to claim and call to call.
      thread_local std::vector<float> panel, scratch_buf;
      if (panel.size() < size_t(kPanelRows) * size_t(k)) panel.resize(size_t(kPanelRows) * size_t(k));
      if (scratch_buf.size() < detail::scratch_floats(k) + 16) scratch_buf.resize(detail::scratch_floats(k) + 16);
      float* scratch = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch_buf.data()) + 63) & ~uintptr_t(63));
      for (int p = p0; p < p1; ++p) {
        const int r0 = p * kPanelRows, pr = std::min(kPanelRows, m - r0);
        for (int i = 0; i < pr; ++i) dequant_row(W.dtype, base + size_t(r0 + i) * rb, panel.data() + size_t(i) * k, k);
        const detail::LinearArgs a{X, n, k, panel.data(), DType::F32, bias ? bias + r0 : nullptr, Y + r0, m};
        rows_fn(a, 0, pr, scratch);
      }
    });
    return;
  }
  const int groups = (m + 3) / 4;  // 4 rows dequantized together, then dotted with each token
  run_team_units(groups, macs, kMinParallelMacs, [&](int g0, int g1) {
    thread_local std::vector<float> rows;  // each member's own, kept from claim to claim
    if (rows.size() < size_t(4) * size_t(k)) rows.resize(size_t(4) * size_t(k));
    for (int g = g0; g < g1; ++g) {
      const int r0 = 4 * g, nr = std::min(4, m - r0);
      for (int i = 0; i < nr; ++i) dequant_row(W.dtype, base + size_t(r0 + i) * rb, rows.data() + size_t(i) * k, k);
      float acc[4];
      for (int t = 0; t < n; ++t) {
        const float* x = X + size_t(t) * k;
        if (nr == 4) dot4(rows.data(), k, x, acc);
        else
          for (int i = 0; i < nr; ++i) acc[i] = dot(rows.data() + size_t(i) * k, x, k);
        for (int i = 0; i < nr; ++i) Y[size_t(t) * m + r0 + i] = acc[i] + (bias ? bias[r0 + i] : 0.f);
      }
    }
  });
}

void embedding_row_quant(const TensorView& E, int row, float* out) {
  int h = 0;
  const int v = block_weight_dims(E, "embedding", &h);
  SPEC_INPUT_CHECK(row >= 0 && row < v, E.name,
                   "token id " + std::to_string(row) + " out of range [0, " + std::to_string(v) + ")");
  dequant_row(E.dtype, static_cast<const uint8_t*>(E.data) + size_t(row) * dtype_row_bytes(E.dtype, h), out, h);
}

void dequantize_rows(const TensorView& W, int64_t first, int64_t count, float* dst) {
  int k = 0;
  const int m = block_weight_dims(W, "dequantize", &k);
  if (first < 0 || count < 0 || first > m || count > m - first) throw std::out_of_range("dequantize_rows: rows");
  const size_t rb = dtype_row_bytes(W.dtype, k);
  for (int64_t r = 0; r < count; ++r)
    dequantize_row(ggml_of(W.dtype), static_cast<const uint8_t*>(W.data) + size_t(first + r) * rb,
                   dst + size_t(r) * size_t(k), k);
}

}  // namespace specscope::cpu
