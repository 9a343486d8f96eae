// Register-only loops for the peaks (independent accumulator chains, enough to hide each instruction's latency)
// and a parallel streaming sum for the bandwidth. Each ISA's loop is compiled for its target and only run after a
// run-time check.
#include "engine/cpu/roofline.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>

#include "engine/cpu/matmul.h"
#include "engine/cpu/matmul_amx.h"
#include "engine/cpu/thread_pool.h"
#include "engine/util/huge_page_arena.h"

// GCC 12 warns about the deliberately undefined vectors inside its own AVX-512 intrinsics (the reductions).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace specscope::cpu {
namespace {

using clock_type = std::chrono::steady_clock;
constexpr int kChains = 12;   // accumulators in flight: latency 4-5 cycles x 2 pipes, with margin
constexpr int kIters = 1 << 16;

__attribute__((target("avx512f"))) float fma_loop_avx512() {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(i));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
  for (int it = 0; it < kIters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2() {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(float(i));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
  for (int it = 0; it < kIters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

__attribute__((target("avx512f,avx512bf16"))) float bf16_loop_avx512() {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(i));
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3a83);
  for (int it = 0; it < kIters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) float vnni_loop_avx512() {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int it = 0; it < kIters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  __m512i s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_epi32(s, acc[i]);
  return float(_mm512_reduce_add_epi32(s));
}

// The AVX2 integer kernels' step at its cheapest (quant_int8_ymm.h, 4-bit codes): unsigned x signed bytes to int16
// pairs 8 times, the pairs added in int16, then widened to int32 once (vpmaddwd with ones) and added: 256 multiply-adds
// a chain an iteration. The empty asm makes the operands opaque at every step: with constant operands GCC computed the
// product once outside the loop, and the loop measured vpaddd alone (the bound printed until 2026-12-03 was that).
// Q5 and Q6 codes (runs of 4 and 2) and Q8_0 (a sign per step, no int16 runs) cost more per product: for them this is
// a looser bound.
__attribute__((target("avx2"))) float int8_loop_avx2() {
  __m256i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_epi32(i);
  __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int it = 0; it < kIters; ++it)
    for (int i = 0; i < kChains; ++i) {
      __m256i p = _mm256_setzero_si256();
      for (int s = 0; s < 8; ++s) {
        asm volatile("" : "+x"(a), "+x"(b));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(a, b));
      }
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(p, ones));
    }
  __m256i s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_epi32(s, acc[i]);
  int32_t out[8];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), s);
  return float(out[0] + out[7]);
}

// Multiply-adds per second of `loop` (macs_per_call each) on every team thread at once: best of 3.
template <class Loop>
double peak_of(Loop loop, double macs_per_call) {
  double best = 0;
  volatile float sink = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::atomic<int> ran{0};  // the team may run fewer threads than asked (its back-off)
    const auto t0 = clock_type::now();
    run_team(team_size(), size_t(-1) / 2, 0, [&](int, int) {
      sink = sink + loop();
      ran.fetch_add(1);
    });
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    best = std::max(best, macs_per_call * ran.load() / s);
  }
  return best;
}

}  // namespace

double read_bandwidth(const float* data, size_t floats, int passes) {
  double best = 0;
  volatile float sink = 0;
  for (int p = 0; p < passes; ++p) {
    const auto t0 = clock_type::now();
    run_team(team_size(), size_t(-1) / 2, 0, [&](int tid, int nt) {
      const size_t b = floats * size_t(tid) / size_t(nt), e = floats * size_t(tid + 1) / size_t(nt);
      float s[16] = {};
      for (size_t i = b; i + 16 <= e; i += 16)
        for (int j = 0; j < 16; ++j) s[j] += data[i + j];
      float t = 0;
      for (float v : s) t += v;
      sink = sink + t;
    });
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    best = std::max(best, double(floats) * sizeof(float) / s);
  }
  return best;
}

const PathPeak* Roofline::peak(const std::string& path_prefix) const {
  for (const auto& p : peaks)
    if (p.path.rfind(path_prefix, 0) == 0) return &p;
  return nullptr;
}

Roofline measure_roofline(size_t working_set_bytes) {
  // Every team thread, even on a busy machine: the fork/join back-off would otherwise measure one thread's peak.
  const BackoffOffScope backoff_off;
  Roofline r;
  r.working_set_bytes = std::max<size_t>(working_set_bytes, 1 << 20);
  const size_t floats = r.working_set_bytes / sizeof(float) / 16 * 16;
  // In huge pages, where the CPU's weights are (engine/model/resident_weights.h): 4 KiB pages read 20-40% slower on
  // the development VM (bench/memory_source.cpp), which made the bound too low for weights in huge pages.
  const std::shared_ptr<void> owner = huge_page_alloc(floats * sizeof(float));
  float* buf = static_cast<float*>(owner.get());
  for (size_t i = 0; i < floats; ++i) buf[i] = float(i & 255);
  r.read_bytes_per_second = read_bandwidth(buf, floats, 5);

  const double chain_calls = double(kIters) * kChains;
  // The instruction set the kernels run, which SPECSCOPE_MATMUL_ISA / set_isa may have narrowed: with AVX2 forced on
  // an AVX-512 CPU the steps run AVX2's kernels, and are set against AVX2's peaks (half AVX-512's on a CPU with two
  // 512-bit FMA units; the same on Zen 4, which splits 512-bit FMAs in two).
  const std::string isa = active_isa();
  if (isa == "avx512") {
    r.peaks.push_back({"f32 fma (avx512)", peak_of(fma_loop_avx512, chain_calls * 16)});
    if (__builtin_cpu_supports("avx512bf16"))
      r.peaks.push_back({"bf16 dot (avx512-bf16)", peak_of(bf16_loop_avx512, chain_calls * 32)});
    if (std::string(linear_roofline_path(DType::BF16)) == "bf16 amx")  // matmul_amx.cpp
      r.peaks.push_back({"bf16 amx (amx-bf16)", peak_of([] { return detail::amx_peak_loop(kIters / 4); },
                                                        double(kIters / 4) * 4 * 16 * 16 * 32)});
    if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw"))
      r.peaks.push_back({"int8 dot (avx512-vnni)", peak_of(vnni_loop_avx512, chain_calls * 64)});
    else
      r.peaks.push_back({"int8 dot (avx2)", peak_of(int8_loop_avx2, chain_calls * 256)});
  } else if (isa == "avx2") {
    r.peaks.push_back({"f32 fma (avx2)", peak_of(fma_loop_avx2, chain_calls * 8)});
    // Without AVX-512 the integer kernels are AVX2's (or AVX-VNNI's, whose vpdpbusd does the same multiply-adds in
    // one instruction: this peak is then a lower bound of theirs).
    r.peaks.push_back({"int8 dot (avx2)", peak_of(int8_loop_avx2, chain_calls * 256)});
  }
  return r;
}

}  // namespace specscope::cpu
