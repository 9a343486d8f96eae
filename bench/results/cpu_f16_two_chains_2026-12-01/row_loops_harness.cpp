// Throwaway: which one-token f16 row loop streams fastest on this VM (not committed).
#include <immintrin.h>
#include <sys/mman.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <algorithm>
using clk = std::chrono::steady_clock;
static inline float hsum(__m512 a) { return _mm512_reduce_add_ps(a); }
static inline __m512 ldh(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)p)); }
// kernels over rows r0..r1 of W [rows, k]
template <bool XH>
static inline __m512 ldx(const void* x, int i) {
  if constexpr (XH) return ldh((const uint16_t*)x + i); else return _mm512_loadu_ps((const float*)x + i);
}
template <bool XH, int PF>
void one_row(const void* x, int k, const uint16_t* W, int r0, int r1, float* y) {
  for (int r = r0; r < r1; ++r) {
    const uint16_t* w = W + size_t(r) * k;
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < k; i += 16) {
      if (PF && (i & 31) == 0) _mm_prefetch((const char*)(w + i) + 16384, _MM_HINT_T1);
      acc = _mm512_fmadd_ps(ldh(w + i), ldx<XH>(x, i), acc);
    }
    y[r] = hsum(acc);
  }
}
template <bool XH, int PF>
void two_rows(const void* x, int k, const uint16_t* W, int r0, int r1, float* y) {
  int r = r0;
  for (; r + 2 <= r1; r += 2) {
    const uint16_t* w0 = W + size_t(r) * k; const uint16_t* w1 = w0 + k;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    for (int i = 0; i < k; i += 16) {
      if (PF && (i & 31) == 0) { _mm_prefetch((const char*)(w0 + i) + 16384, _MM_HINT_T1); _mm_prefetch((const char*)(w1 + i) + 16384, _MM_HINT_T1);}
      __m512 xv = ldx<XH>(x, i);
      a0 = _mm512_fmadd_ps(ldh(w0 + i), xv, a0);
      a1 = _mm512_fmadd_ps(ldh(w1 + i), xv, a1);
    }
    y[r] = hsum(a0); y[r + 1] = hsum(a1);
  }
  if (r < r1) one_row<XH, PF>(x, k, W, r, r1, y);
}
template <bool XH, int PF = 0>
void two_chains(const void* x, int k, const uint16_t* W, int r0, int r1, float* y) {
  for (int r = r0; r < r1; ++r) {
    const uint16_t* w = W + size_t(r) * k;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    for (int i = 0; i < k; i += 32) {
      if (PF) _mm_prefetch((const char*)(w + i) + 16384, _MM_HINT_T1);
      a0 = _mm512_fmadd_ps(ldh(w + i), ldx<XH>(x, i), a0);
      a1 = _mm512_fmadd_ps(ldh(w + i + 16), ldx<XH>(x, i + 16), a1);
    }
    y[r] = hsum(_mm512_add_ps(a0, a1));
  }
}
template <bool XH>
void halves(const void* x, int k, const uint16_t* W, int r0, int r1, float* y) {
  const int h = k / 2;
  for (int r = r0; r < r1; ++r) {
    const uint16_t* w = W + size_t(r) * k;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    for (int i = 0; i < h; i += 16) {
      a0 = _mm512_fmadd_ps(ldh(w + i), ldx<XH>(x, i), a0);
      a1 = _mm512_fmadd_ps(ldh(w + h + i), ldx<XH>(x, h + i), a1);
    }
    y[r] = hsum(a0) + hsum(a1);
  }
}
template <bool XH>
void four_chains(const void* x, int k, const uint16_t* W, int r0, int r1, float* y) {
  for (int r = r0; r < r1; ++r) {
    const uint16_t* w = W + size_t(r) * k;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int i = 0; i < k; i += 64) {
      a0 = _mm512_fmadd_ps(ldh(w + i), ldx<XH>(x, i), a0);
      a1 = _mm512_fmadd_ps(ldh(w + i + 16), ldx<XH>(x, i + 16), a1);
      a2 = _mm512_fmadd_ps(ldh(w + i + 32), ldx<XH>(x, i + 32), a2);
      a3 = _mm512_fmadd_ps(ldh(w + i + 48), ldx<XH>(x, i + 48), a3);
    }
    y[r] = hsum(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  }
}
void sum_rows(const void*, int k, const uint16_t* W, int r0, int r1, float* y) {
  const float* p = (const float*)(W + size_t(r0) * k); size_t n = size_t(r1 - r0) * k / 2;
  __m512 a = _mm512_setzero_ps(), b = a, c = a, d = a;
  for (size_t i = 0; i < n; i += 64) { a = _mm512_add_ps(a, _mm512_loadu_ps(p + i)); b = _mm512_add_ps(b, _mm512_loadu_ps(p + i + 16)); c = _mm512_add_ps(c, _mm512_loadu_ps(p + i + 32)); d = _mm512_add_ps(d, _mm512_loadu_ps(p + i + 48)); }
  y[r0] = hsum(a) + hsum(b) + hsum(c) + hsum(d);
}
using Fn = void (*)(const void*, int, const uint16_t*, int, int, float*);
struct M { const uint16_t* w; int rows, k; };
std::atomic<int> gen{0}, done{0};
Fn cur; const void* curx; std::vector<M>* curms; float* Y;
#include <sched.h>
void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); sched_setaffinity(0, sizeof(s), &s); }
void member(int tid) {
  pin(tid);
  int seen = 0;
  for (;;) {
    while (gen.load(std::memory_order_acquire) == seen) _mm_pause();
    seen = gen.load();
    if (seen < 0) return;
    for (auto& m : *curms) {
      int h = m.rows / 2;
      cur(curx, m.k, m.w, tid ? h : 0, tid ? m.rows : h, Y);
      // barrier
      int d = done.fetch_add(1) + 1;
      int target = (d + 1) / 2 * 2;
      while (done.load(std::memory_order_acquire) < target) _mm_pause();
    }
  }
}
int main() {
  size_t n = size_t(1900) << 20;
  char* buf = (char*)aligned_alloc(1 << 21, n);
  madvise(buf, n, MADV_HUGEPAGE);
  for (size_t i = 0; i < n / 2; ++i) ((uint16_t*)buf)[i] = 0x3c00 ^ (i & 0x3ff);
  std::vector<M> ms; size_t used = 0;
  int shapes[][2] = {{2048, 2048}, {512, 2048}, {512, 2048}, {2048, 2048}, {8192, 2048}, {8192, 2048}, {2048, 8192}};
  for (bool go = true; go;) for (auto& s : shapes) { size_t nb = size_t(s[0]) * s[1] * 2; if (used + nb > n) { go = false; break; } ms.push_back({(uint16_t*)(buf + used), s[0], s[1]}); used += nb; }
  std::vector<float> xf(8192, 0.01f); std::vector<uint16_t> xh(8192, 0x2000); std::vector<float> y(8192);
  Y = y.data(); curms = &ms;
  std::thread t1(member, 1); pin(0);
  struct V { const char* name; Fn f; bool xh; } vs[] = {
    {"sum", sum_rows, false}, {"one_row x32 pf1", one_row<false, 1>, false}, {"one_row xh pf0", one_row<true, 0>, true},
    {"two_chains xh pf1", two_chains<true, 1>, true}, {"two_chains x32 pf1", two_chains<false, 1>, false}, {"four_chains xh", four_chains<true>, true},
    {"two_chains xh", two_chains<true>, true}};
  const int NV = sizeof(vs) / sizeof(vs[0]);
  std::vector<std::vector<double>> res(NV);
  int g = 0;
  for (int round = 0; round < 8; ++round) {
    fprintf(stderr, "round %d:", round);
    for (int v = 0; v < NV; ++v) {
      if (v == 0 && round) fprintf(stderr, "\n");
      cur = vs[v].f; curx = vs[v].xh ? (const void*)xh.data() : (const void*)xf.data();
      auto t0 = clk::now();
      done.store(0); gen.store(++g, std::memory_order_release);
      for (auto& m : ms) {
        int h = m.rows / 2; cur(curx, m.k, m.w, 0, h, Y);
        int d = done.fetch_add(1) + 1; int target = (d + 1) / 2 * 2;
        while (done.load(std::memory_order_acquire) < target) _mm_pause();
      }
      double s = std::chrono::duration<double>(clk::now() - t0).count();
      res[v].push_back(used / s / 1e9); fprintf(stderr, " %.1f", res[v].back());
    }
  }
  gen.store(-1); t1.join();
  for (int v = 0; v < NV; ++v) { auto r = res[v]; std::sort(r.begin(), r.end()); printf("%-20s median %.1f GB/s (min %.1f max %.1f)\n", vs[v].name, r[r.size() / 2], r[0], r.back()); }
}
