#include "engine/cpu/int4_panels.h"

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

constexpr int kRows = Int4Panels::kRows, kGroup = Int4Panels::kGroup;

// One call's activations: signed codes (zero past k), 8 * each group's code sum, and each token's scale.
struct ActS8 {
  std::vector<uint8_t> q;      // [n][groups * 32], the bytes of signed codes
  std::vector<int32_t> corr;   // [n][groups]
  std::vector<float> s;        // [n]
};

// `scalar`: the reference's loop (the kernel's gives the same bits, panel_act.h).
void quantize_rows(const float* X, int n, int k, int groups, ActS8& a, bool scalar = false) {
  const size_t kp = size_t(groups) * kGroup;
  a.q.resize(size_t(n) * kp);
  a.corr.resize(size_t(n) * size_t(groups));
  a.s.resize(size_t(n));
  (scalar ? detail::quantize_token_rows_scalar : detail::quantize_token_rows)(X, n, k, int(kp), 0, a.q.data(),
                                                                              a.s.data());
  for (size_t tg = 0; tg < a.corr.size(); ++tg) {
    const auto* c = reinterpret_cast<const int8_t*>(a.q.data()) + tg * kGroup;
    int32_t sum = 0;
    for (int i = 0; i < kGroup; ++i) sum += c[i];
    a.corr[tg] = 8 * sum;
  }
}

// The float formula's last step, written out so that contraction cannot make the reference differ from the kernel.
inline float finish(float f, float sx, const float* bias, int r) { return bias ? std::fma(f, sx, bias[r]) : f * sx; }

#pragma GCC push_options
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on its own _mm512_undefined_* in intrinsics
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c")

// Panels [p, p + P) against tokens [t0, t0 + T): per group, P x T integer accumulators, then one float step each.
template <int P, int T>
void tile(const Int4Panels& w, const ActS8& a, int p, int t0, const float* bias, float* Y) {
  const size_t kp = size_t(w.groups) * kGroup;
  const __m512i m4 = _mm512_set1_epi8(15);
  __m512 f[P][T];
  for (int i = 0; i < P; ++i)
    for (int u = 0; u < T; ++u) f[i][u] = _mm512_setzero_ps();
  const int32_t* xq[T];
  const int32_t* corr[T];
  for (int u = 0; u < T; ++u) {
    xq[u] = reinterpret_cast<const int32_t*>(a.q.data() + size_t(t0 + u) * kp);
    corr[u] = a.corr.data() + size_t(t0 + u) * size_t(w.groups);
  }
  for (int g = 0; g < w.groups; ++g) {
    __m512i acc[P][T];
    for (int i = 0; i < P; ++i)
      for (int u = 0; u < T; ++u) acc[i][u] = _mm512_setzero_si512();
    for (int v = 0; v < 4; ++v) {
      __m512i lo[P], hi[P];
      for (int i = 0; i < P; ++i) {
        const __m512i raw = _mm512_load_si512(w.codes(p + i, g) + 64 * v);
        lo[i] = _mm512_and_si512(raw, m4);
        hi[i] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
      }
      for (int u = 0; u < T; ++u) {
        const __m512i x0 = _mm512_set1_epi32(xq[u][8 * g + 2 * v]), x1 = _mm512_set1_epi32(xq[u][8 * g + 2 * v + 1]);
        for (int i = 0; i < P; ++i) {
          acc[i][u] = _mm512_dpbusd_epi32(acc[i][u], lo[i], x0);
          acc[i][u] = _mm512_dpbusd_epi32(acc[i][u], hi[i], x1);
        }
      }
    }
    for (int i = 0; i < P; ++i) {
      const __m512 sc = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(w.scales(p + i, g))));
      for (int u = 0; u < T; ++u)
        f[i][u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i][u], _mm512_set1_epi32(corr[u][g]))), sc,
                                  f[i][u]);
    }
  }
  for (int i = 0; i < P; ++i) {
    const int r0 = (p + i) * kRows, left = std::min(kRows, w.m - r0);
    const __mmask16 keep = left >= kRows ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
    const __m512 b = bias ? _mm512_maskz_loadu_ps(keep, bias + r0) : _mm512_setzero_ps();
    for (int u = 0; u < T; ++u) {
      const __m512 sx = _mm512_set1_ps(a.s[size_t(t0 + u)]);
      const __m512 y = bias ? _mm512_fmadd_ps(f[i][u], sx, b) : _mm512_mul_ps(f[i][u], sx);
      _mm512_mask_storeu_ps(Y + size_t(t0 + u) * size_t(w.m) + size_t(r0), keep, y);
    }
  }
}

template <int P>
void panels_all_tokens(const Int4Panels& w, const ActS8& a, int n, int p, const float* bias, float* Y) {
  int t = 0;
  for (; t + 2 <= n; t += 2) tile<P, 2>(w, a, p, t, bias, Y);
  if (t < n) tile<P, 1>(w, a, p, t, bias, Y);
}

void run_panels(const Int4Panels& w, const ActS8& a, int n, const float* bias, float* Y, int p0, int p1) {
  int p = p0;
  for (; p + 4 <= p1; p += 4) panels_all_tokens<4>(w, a, n, p, bias, Y);
  for (; p < p1; ++p) panels_all_tokens<1>(w, a, n, p, bias, Y);
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// The AVX2 kernel (CPUs without AVX-512 VNNI), one panel x T tokens: each 64-byte code vector is two ymm (rows 0-7,
// 8-15); vpmaddubsw multiplies the unsigned codes by the signed activation codes into int16 pair sums, at most
// 2 * 15 * 127, so a group's 8 of them (its 32 codes) add up in int16 (at most 30480) before one vpmaddwd widens them:
// the same exact I_g, and then the same float steps in group order, as the AVX-512 kernel and the reference.
template <int T>
void tile_avx2(const Int4Panels& w, const ActS8& a, int p, int t0, const float* bias, float* Y) {
  const size_t kp = size_t(w.groups) * kGroup;
  const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
  __m256 f[2][T];
  for (int h = 0; h < 2; ++h)
    for (int u = 0; u < T; ++u) f[h][u] = _mm256_setzero_ps();
  const int32_t* xq[T];
  const int32_t* corr[T];
  for (int u = 0; u < T; ++u) {
    xq[u] = reinterpret_cast<const int32_t*>(a.q.data() + size_t(t0 + u) * kp);
    corr[u] = a.corr.data() + size_t(t0 + u) * size_t(w.groups);
  }
  for (int g = 0; g < w.groups; ++g)
    for (int h = 0; h < 2; ++h) {
      __m256i pairs[T];
      for (int v = 0; v < 4; ++v) {
        const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(w.codes(p, g) + 64 * v + 32 * h));
        const __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
        for (int u = 0; u < T; ++u) {
          const __m256i x0 = _mm256_set1_epi32(xq[u][8 * g + 2 * v]), x1 = _mm256_set1_epi32(xq[u][8 * g + 2 * v + 1]);
          const __m256i both = _mm256_add_epi16(_mm256_maddubs_epi16(lo, x0), _mm256_maddubs_epi16(hi, x1));
          pairs[u] = v == 0 ? both : _mm256_add_epi16(pairs[u], both);
        }
      }
      const __m256 sc =
          _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(w.scales(p, g) + 2 * 8 * h)));
      for (int u = 0; u < T; ++u) {
        const __m256i I = _mm256_sub_epi32(_mm256_madd_epi16(pairs[u], ones), _mm256_set1_epi32(corr[u][g]));
        f[h][u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I), sc, f[h][u]);
      }
    }
  for (int h = 0; h < 2; ++h) {
    const int r0 = p * kRows + 8 * h, left = std::min(8, w.m - r0);
    if (left <= 0) break;
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 b = bias ? _mm256_maskload_ps(bias + r0, keep) : _mm256_setzero_ps();
    for (int u = 0; u < T; ++u) {
      const __m256 sx = _mm256_set1_ps(a.s[size_t(t0 + u)]);
      const __m256 y = bias ? _mm256_fmadd_ps(f[h][u], sx, b) : _mm256_mul_ps(f[h][u], sx);
      _mm256_maskstore_ps(Y + size_t(t0 + u) * size_t(w.m) + size_t(r0), keep, y);
    }
  }
}

void run_panels_avx2(const Int4Panels& w, const ActS8& a, int n, const float* bias, float* Y, int p0, int p1) {
  for (int p = p0; p < p1; ++p) {
    int t = 0;
    for (; t + 2 <= n; t += 2) tile_avx2<2>(w, a, p, t, bias, Y);
    if (t < n) tile_avx2<1>(w, a, p, t, bias, Y);
  }
}

#pragma GCC pop_options

}  // namespace

int Int4Panels::code(int r, int i) const {
  const int g = i / kGroup, j = i % kGroup, v = j / 8, within = j % 8;
  const uint8_t byte = codes(r / kRows, g)[64 * v + 4 * (r % kRows) + within % 4];
  return within < 4 ? byte & 15 : byte >> 4;
}

float Int4Panels::scale(int r, int g) const {
  const uint8_t* s = scales(r / kRows, g) + 2 * (r % kRows);
  return f16_to_f32(uint16_t(s[0] | (s[1] << 8)));
}

bool int4_panels_supported() {
  return detail::panels_have_avx512_vnni() || detail::panels_avx2_supported();  // both with F16C for the scales
}

std::shared_ptr<const Int4Panels> pack_int4_panels(const TensorView& W) {
  if (W.shape.size() != 2 || !(W.dtype == DType::F32 || W.dtype == DType::F16 || W.dtype == DType::BF16))
    throw std::invalid_argument("pack_int4_panels: '" + W.name + "' is not a dense 2-D f32/f16/bf16 weight");
  auto p = std::make_shared<Int4Panels>();
  p->m = int(W.shape[0]), p->k = int(W.shape[1]);
  p->groups = (p->k + kGroup - 1) / kGroup, p->panels = (p->m + kRows - 1) / kRows;
  // The panels' layout (int4_panels.h) with each panel rounded up to whole cache lines, so that every code vector is
  // an aligned load: a panel's codes (groups x 256 bytes), then its scales (groups x 32 bytes).
  const size_t pb = (size_t(p->groups) * Int4Panels::kGroupBytes + 63) / 64 * 64;
  p->panel_bytes = pb;
  p->storage = huge_page_alloc(pb * size_t(p->panels));
  auto* base = static_cast<uint8_t*>(p->storage.get());
  std::fill_n(base, pb * size_t(p->panels), uint8_t(0x88));  // code 8 in both nibbles: weight 0
  std::vector<float> row(size_t(p->k));
  for (int r = 0; r < p->panels * kRows; ++r) {
    uint8_t* panel = base + size_t(r / kRows) * pb;
    uint8_t* scales = panel + size_t(p->groups) * Int4Panels::kCodeBytes;
    if (r >= p->m) {  // rows past m: scale 0
      for (int g = 0; g < p->groups; ++g) scales[size_t(g) * 2 * kRows + 2 * (r % kRows)] = 0,
                                         scales[size_t(g) * 2 * kRows + 2 * (r % kRows) + 1] = 0;
      continue;
    }
    convert_to_f32(W.dtype, static_cast<const char*>(W.data) + size_t(r) * size_t(p->k) * dtype_size(W.dtype),
                   row.data(), row.size());
    for (int g = 0; g < p->groups; ++g) {
      const int i0 = g * kGroup, i1 = std::min(p->k, i0 + kGroup);
      float extreme = 0.f;  // the value of largest magnitude, with its sign
      for (int i = i0; i < i1; ++i)
        if (std::fabs(row[size_t(i)]) > std::fabs(extreme)) extreme = row[size_t(i)];
      const uint16_t d16 = f32_to_f16(extreme / -8.f);
      const float d = f16_to_f32(d16);
      uint8_t* s = scales + size_t(g) * 2 * kRows + 2 * (r % kRows);
      s[0] = uint8_t(d16 & 0xff), s[1] = uint8_t(d16 >> 8);
      const float inv = d != 0.f && std::isfinite(d) ? 1.f / d : 0.f;
      uint8_t* codes = panel + size_t(g) * Int4Panels::kCodeBytes + 4 * size_t(r % kRows);
      for (int i = i0; i < i1; ++i) {
        const int c = std::clamp(int(std::nearbyint(row[size_t(i)] * inv)) + 8, 0, 15), j = i - i0;
        uint8_t& byte = codes[64 * (j / 8) + (j % 4)];
        byte = (j % 8) < 4 ? uint8_t((byte & 0xf0) | c) : uint8_t((byte & 0x0f) | (c << 4));
      }
    }
  }
  p->data = base;
  return p;
}

void linear_int4_panels(const float* X, int n, const Int4Panels& w, const float* bias, float* Y) {
  if (n <= 0 || w.m == 0) return;
  // The calling thread's buffer: the team only reads it, and the call returns before the next one.
  thread_local ActS8 buffer;
  quantize_rows(X, n, w.k, w.groups, buffer);
  const ActS8& a = buffer;
  const bool avx512 = detail::panels_use_avx512_vnni();
  run_team_units(w.panels, size_t(w.m) * size_t(w.k) * size_t(n), detail::kPanelMinParallelMacs, [&](int p0, int p1) {
    if (avx512)
      run_panels(w, a, n, bias, Y, p0, p1);
    else
      run_panels_avx2(w, a, n, bias, Y, p0, p1);
  });
}

void linear_int4_panels_reference(const float* X, int n, const Int4Panels& w, const float* bias, float* Y) {
  ActS8 a;
  quantize_rows(X, n, w.k, w.groups, a, true);
  const size_t kp = size_t(w.groups) * kGroup;
  for (int t = 0; t < n; ++t) {
    const auto* x = reinterpret_cast<const int8_t*>(a.q.data()) + size_t(t) * kp;
    const int32_t* corr = a.corr.data() + size_t(t) * size_t(w.groups);
    for (int r = 0; r < w.m; ++r) {
      float f = 0.f;
      for (int g = 0; g < w.groups; ++g) {
        int32_t dot = 0;
        for (int i = g * kGroup; i < (g + 1) * kGroup; ++i) dot += (i < w.k ? w.code(r, i) : 8) * int32_t(x[i]);
        f = std::fma(float(dot - corr[g]), w.scale(r, g), f);
      }
      Y[size_t(t) * size_t(w.m) + size_t(r)] = finish(f, a.s[size_t(t)], bias, r);
    }
  }
}

}  // namespace specscope::cpu
