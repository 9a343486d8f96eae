#include "engine/cpu/int8_panels.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/cpu/matmul.h"
#include "engine/cpu/panel_act.h"
#include "engine/cpu/thread_pool.h"
#include "engine/util/huge_page_arena.h"

namespace specscope::cpu {
namespace {

constexpr int kRows = 16;

// One token's activations: codes + 128 as bytes (k padded to quads with 128, i.e. code 0), and its scale.
struct ActU8 {
  std::vector<uint8_t> q;  // [n][quads * 4]
  std::vector<float> s;    // [n]
};

// `scalar`: the reference's loop (the kernel's gives the same bits, panel_act.h). `offset`: 128 for vpdpbusd's
// unsigned operand (AVX-512), 0 for the AVX2 kernel's signed codes.
void quantize_rows(const float* X, int n, int k, int quads, ActU8& a, bool scalar = false, uint8_t offset = 128) {
  const size_t kp = size_t(quads) * 4;
  a.q.resize(size_t(n) * kp);
  a.s.resize(size_t(n));
  (scalar ? detail::quantize_token_rows_scalar : detail::quantize_token_rows)(X, n, k, int(kp), offset, a.q.data(),
                                                                              a.s.data());
}

// The float formula, with the bias added by one fused multiply-add: written out, so that the compiler's contraction
// of a * b + c cannot make this reference differ from the kernel.
inline float finish(int32_t acc, int32_t wsum, float scale, float sx, const float* bias, int r) {
  const float a = float(acc - 128 * wsum) * scale;
  return bias ? std::fma(a, sx, bias[r]) : a * sx;
}

#pragma GCC push_options
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on its own _mm512_undefined_* in intrinsics
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")

// Panels [p0, p1) of 16 rows against tokens [t0, t0 + T): P panels x T tokens of vpdpbusd accumulators.
template <int P, int T>
void tile(const Int8Panels& w, const ActU8& a, size_t kp, int p, int t0, const float* bias, float* Y) {
  __m512i acc[P][T];
  for (int i = 0; i < P; ++i)
    for (int u = 0; u < T; ++u) acc[i][u] = _mm512_setzero_si512();
  const int32_t* xq[T];
  for (int u = 0; u < T; ++u) xq[u] = reinterpret_cast<const int32_t*>(a.q.data() + size_t(t0 + u) * kp);
  const int8_t* base[P];
  for (int i = 0; i < P; ++i) base[i] = w.panel(p + i);
  for (int j = 0; j < w.quads; ++j) {
    __m512i wv[P];
    for (int i = 0; i < P; ++i) wv[i] = _mm512_load_si512(base[i] + size_t(j) * 64);
    for (int u = 0; u < T; ++u) {
      const __m512i xv = _mm512_set1_epi32(xq[u][j]);
      for (int i = 0; i < P; ++i) acc[i][u] = _mm512_dpbusd_epi32(acc[i][u], xv, wv[i]);
    }
  }
  for (int i = 0; i < P; ++i) {
    const int r0 = (p + i) * kRows, left = std::min(kRows, w.m - r0);
    const __mmask16 keep = left >= kRows ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
    const __m512i corr = _mm512_slli_epi32(_mm512_loadu_si512(w.sum + r0), 7);  // 128 * sum of the row's codes
    const __m512 sc = _mm512_loadu_ps(w.scale + r0);
    const __m512 b = bias ? _mm512_maskz_loadu_ps(keep, bias + r0) : _mm512_setzero_ps();
    for (int u = 0; u < T; ++u) {
      const __m512 sx = _mm512_set1_ps(a.s[size_t(t0 + u)]);
      const __m512 a = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i][u], corr)), sc);
      const __m512 y = bias ? _mm512_fmadd_ps(a, sx, b) : _mm512_mul_ps(a, sx);
      _mm512_mask_storeu_ps(Y + size_t(t0 + u) * size_t(w.m) + size_t(r0), keep, y);
    }
  }
}

template <int P>
void panels_all_tokens(const Int8Panels& w, const ActU8& a, size_t kp, int n, int p, const float* bias, float* Y) {
  int t = 0;
  for (; t + 4 <= n; t += 4) tile<P, 4>(w, a, kp, p, t, bias, Y);
  switch (n - t) {
    case 1: tile<P, 1>(w, a, kp, p, t, bias, Y); break;
    case 2: tile<P, 2>(w, a, kp, p, t, bias, Y); break;
    case 3: tile<P, 3>(w, a, kp, p, t, bias, Y); break;
    default: break;
  }
}

void run_panels(const Int8Panels& w, const ActU8& a, int n, const float* bias, float* Y, int p0, int p1) {
  const size_t kp = size_t(w.quads) * 4;
  int p = p0;
  for (; p + 4 <= p1; p += 4) panels_all_tokens<4>(w, a, kp, n, p, bias, Y);
  for (; p < p1; ++p) panels_all_tokens<1>(w, a, kp, n, p, bias, Y);
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")

// The AVX2 kernel (CPUs without AVX-512 VNNI): vpmaddubsw takes unsigned bytes, and the activations' 128-offset
// codes times a weight code could saturate its int16 pair sums (255 * 127 * 2 > 2^15), so it multiplies |w| by the
// signed activation code with w's sign (vpsignb), as ggml's AVX2 kernels do: pair sums at most 2 * 127 * 127, exact.
// The integer sum is then I = sum w_code x_code itself, the one the AVX-512 kernel reaches by taking 128 * sum off,
// so the same float formula gives the same bits. One panel (16 rows: two ymm of 8 rows x 4 codes) x T tokens.
template <int T>
void tile_avx2(const Int8Panels& w, const ActU8& a, size_t kp, int p, int t0, const float* bias, float* Y) {
  __m256i acc[2][T];
  for (int h = 0; h < 2; ++h)
    for (int u = 0; u < T; ++u) acc[h][u] = _mm256_setzero_si256();
  const int32_t* xq[T];
  for (int u = 0; u < T; ++u) xq[u] = reinterpret_cast<const int32_t*>(a.q.data() + size_t(t0 + u) * kp);
  const int8_t* base = w.panel(p);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int j = 0; j < w.quads; ++j) {
    const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(base + size_t(j) * 64));
    const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(base + size_t(j) * 64 + 32));
    const __m256i a0 = _mm256_sign_epi8(w0, w0), a1 = _mm256_sign_epi8(w1, w1);
    for (int u = 0; u < T; ++u) {
      const __m256i xv = _mm256_set1_epi32(xq[u][j]);
      const __m256i p0 = _mm256_maddubs_epi16(a0, _mm256_sign_epi8(xv, w0));
      const __m256i p1 = _mm256_maddubs_epi16(a1, _mm256_sign_epi8(xv, w1));
      acc[0][u] = _mm256_add_epi32(acc[0][u], _mm256_madd_epi16(p0, ones));
      acc[1][u] = _mm256_add_epi32(acc[1][u], _mm256_madd_epi16(p1, ones));
    }
  }
  for (int h = 0; h < 2; ++h) {
    const int r0 = p * kRows + 8 * h, left = std::min(8, w.m - r0);
    if (left <= 0) break;
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 sc = _mm256_loadu_ps(w.scale + r0);  // the scale array covers whole panels
    const __m256 b = bias ? _mm256_maskload_ps(bias + r0, keep) : _mm256_setzero_ps();
    for (int u = 0; u < T; ++u) {
      const __m256 sx = _mm256_set1_ps(a.s[size_t(t0 + u)]);
      const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[h][u]), sc);
      const __m256 y = bias ? _mm256_fmadd_ps(v, sx, b) : _mm256_mul_ps(v, sx);
      _mm256_maskstore_ps(Y + size_t(t0 + u) * size_t(w.m) + size_t(r0), keep, y);
    }
  }
}

void run_panels_avx2(const Int8Panels& w, const ActU8& a, int n, const float* bias, float* Y, int p0, int p1) {
  const size_t kp = size_t(w.quads) * 4;
  for (int p = p0; p < p1; ++p) {
    int t = 0;
    for (; t + 3 <= n; t += 3) tile_avx2<3>(w, a, kp, p, t, bias, Y);
    switch (n - t) {
      case 1: tile_avx2<1>(w, a, kp, p, t, bias, Y); break;
      case 2: tile_avx2<2>(w, a, kp, p, t, bias, Y); break;
      default: break;
    }
  }
}

#pragma GCC pop_options

}  // namespace

bool int8_panels_supported() {
  return detail::panels_have_avx512_vnni() || detail::panels_avx2_supported();
}

std::shared_ptr<const Int8Panels> pack_int8_panels(const TensorView& W) {
  if (W.shape.size() != 2 || !(W.dtype == DType::F32 || W.dtype == DType::F16 || W.dtype == DType::BF16))
    throw std::invalid_argument("pack_int8_panels: '" + W.name + "' is not a dense 2-D f32/f16/bf16 weight");
  auto p = std::make_shared<Int8Panels>();
  p->m = int(W.shape[0]), p->k = int(W.shape[1]);
  p->quads = (p->k + 3) / 4, p->panels = (p->m + kRows - 1) / kRows;
  const size_t rows = size_t(p->panels) * kRows, code_bytes = rows * size_t(p->quads) * 4;
  const size_t code_span = (code_bytes + 63) / 64 * 64;
  p->storage = huge_page_alloc(code_span + rows * (sizeof(float) + sizeof(int32_t)));
  auto* codes = static_cast<int8_t*>(p->storage.get());
  auto* scale = reinterpret_cast<float*>(codes + code_span);
  auto* sum = reinterpret_cast<int32_t*>(scale + rows);
  std::fill_n(codes, code_bytes, int8_t(0));
  std::fill_n(scale, rows, 0.f);
  std::fill_n(sum, rows, 0);
  std::vector<float> row(size_t(p->k));
  for (int r = 0; r < p->m; ++r) {
    convert_to_f32(W.dtype, static_cast<const char*>(W.data) + size_t(r) * size_t(p->k) * dtype_size(W.dtype),
                   row.data(), row.size());
    float amax = 0.f;
    for (float v : row) amax = std::max(amax, std::fabs(v));
    const float s = amax / 127.f;
    if (!(s >= std::numeric_limits<float>::min())) continue;  // an all-zero row: codes 0, scale 0
    const float inv = 1.f / s;
    int8_t* lane = codes + (size_t(r / kRows) * size_t(p->quads) * kRows + size_t(r % kRows)) * 4;
    int32_t total = 0;
    for (int i = 0; i < p->k; ++i) {
      const int c = std::clamp(int(std::nearbyint(row[size_t(i)] * inv)), -127, 127);
      lane[size_t(i / 4) * kRows * 4 + size_t(i % 4)] = int8_t(c);
      total += c;
    }
    scale[r] = s;
    sum[r] = total;
  }
  p->codes = codes, p->scale = scale, p->sum = sum;
  return p;
}

void linear_int8_panels(const float* X, int n, const Int8Panels& w, const float* bias, float* Y) {
  if (n <= 0 || w.m == 0) return;
  // The calling thread's buffer: the team only reads it, and the call returns before the next one.
  thread_local ActU8 buffer;
  const bool avx512 = detail::panels_use_avx512_vnni();
  quantize_rows(X, n, w.k, w.quads, buffer, false, avx512 ? 128 : 0);
  const ActU8& a = buffer;
  run_team_units(w.panels, size_t(w.m) * size_t(w.k) * size_t(n), detail::kPanelMinParallelMacs, [&](int p0, int p1) {
    if (avx512)
      run_panels(w, a, n, bias, Y, p0, p1);
    else
      run_panels_avx2(w, a, n, bias, Y, p0, p1);
  });
}

void linear_int8_panels_reference(const float* X, int n, const Int8Panels& w, const float* bias, float* Y) {
  ActU8 a;
  quantize_rows(X, n, w.k, w.quads, a, true);
  const size_t kp = size_t(w.quads) * 4;
  for (int t = 0; t < n; ++t)
    for (int r = 0; r < w.m; ++r) {
      const int8_t* lane = w.codes + (size_t(r / kRows) * size_t(w.quads) * kRows + size_t(r % kRows)) * 4;
      const uint8_t* x = a.q.data() + size_t(t) * kp;
      int32_t acc = 0;
      for (int j = 0; j < w.quads; ++j)
        for (int i = 0; i < 4; ++i) acc += int32_t(lane[size_t(j) * kRows * 4 + size_t(i)]) * int32_t(x[4 * j + i]);
      Y[size_t(t) * size_t(w.m) + size_t(r)] = finish(acc, w.sum[r], w.scale[r], a.s[size_t(t)], bias, r);
    }
}

}  // namespace specscope::cpu
