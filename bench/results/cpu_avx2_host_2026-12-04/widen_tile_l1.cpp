// Measurement only (not built): the AVX2 3 x 4 bf16 tile of engine/cpu/matmul_rows.h rewritten flat, against an
// unpack-based widening and the same tile on f32 weights, all in L1, one thread. Output: widen_tile_l1.txt.
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <vector>
// 3 rows x 4 tokens, K=256, data in L1: current widen (pmovzx+slld) vs unpack (lo/hi of 16).
__attribute__((noinline)) void cur(const float* x, const uint16_t* w, int K, float* out) {
  __m256 acc[3][4];
  for (auto& r : acc) for (auto& a : r) a = _mm256_setzero_ps();
  for (int k = 0; k < K; k += 8) {
    __m256 wv[3];
    for (int r = 0; r < 3; ++r) wv[r] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)(w + r * K + k))), 16));
    for (int t = 0; t < 4; ++t) { __m256 xv = _mm256_loadu_ps(x + t * K + k); for (int r = 0; r < 3; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]); }
  }
  for (int r = 0; r < 3; ++r) for (int t = 0; t < 4; ++t) _mm256_storeu_ps(out + (r * 4 + t) * 8, acc[r][t]);
}
__attribute__((noinline)) void unp(const float* x, const uint16_t* w, int K, float* out) {
  __m256 acc[3][4];
  for (auto& r : acc) for (auto& a : r) a = _mm256_setzero_ps();
  const __m256i z = _mm256_setzero_si256();
  for (int k = 0; k < K; k += 16) {
    __m256 lo[3], hi[3];
    for (int r = 0; r < 3; ++r) { __m256i s = _mm256_loadu_si256((const __m256i*)(w + r * K + k)); lo[r] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, s)); hi[r] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, s)); }
    for (int t = 0; t < 4; ++t) { __m256 xv = _mm256_loadu_ps(x + t * K + k); for (int r = 0; r < 3; ++r) acc[r][t] = _mm256_fmadd_ps(lo[r], xv, acc[r][t]); }
    for (int t = 0; t < 4; ++t) { __m256 xv = _mm256_loadu_ps(x + t * K + k + 8); for (int r = 0; r < 3; ++r) acc[r][t] = _mm256_fmadd_ps(hi[r], xv, acc[r][t]); }
  }
  for (int r = 0; r < 3; ++r) for (int t = 0; t < 4; ++t) _mm256_storeu_ps(out + (r * 4 + t) * 8, acc[r][t]);
}
__attribute__((noinline)) void f32k(const float* x, const float* w, int K, float* out) {
  __m256 acc[3][4];
  for (auto& r : acc) for (auto& a : r) a = _mm256_setzero_ps();
  for (int k = 0; k < K; k += 8) {
    __m256 wv[3];
    for (int r = 0; r < 3; ++r) wv[r] = _mm256_loadu_ps(w + r * K + k);
    for (int t = 0; t < 4; ++t) { __m256 xv = _mm256_loadu_ps(x + t * K + k); for (int r = 0; r < 3; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]); }
  }
  for (int r = 0; r < 3; ++r) for (int t = 0; t < 4; ++t) _mm256_storeu_ps(out + (r * 4 + t) * 8, acc[r][t]);
}
int main() {
  const int K = 256, N = 400000;
  std::vector<float> x(4 * K, 0.5f), wf(3 * K, 0.25f), out(96);
  std::vector<uint16_t> w(3 * K, 0x3e80);
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < N; ++i) cur(x.data(), w.data(), K, out.data());
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < N; ++i) unp(x.data(), w.data(), K, out.data());
    auto t2 = std::chrono::steady_clock::now();
    for (int i = 0; i < N; ++i) f32k(x.data(), wf.data(), K, out.data());
    auto t3 = std::chrono::steady_clock::now();
    double macs = double(N) * 12 * K;
    auto g = [&](auto a, auto b) { return macs / std::chrono::duration<double>(b - a).count() / 1e9; };
    printf("cur %.1f  unpack %.1f  f32 %.1f GMAC/s\n", g(t0, t1), g(t1, t2), g(t2, t3));
  }
}
