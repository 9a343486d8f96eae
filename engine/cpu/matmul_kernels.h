#pragma once
// Internal to engine/cpu/matmul*.cpp: the per-instruction-set kernels linear() dispatches to. Each
// kernel family lives in its own .cpp compiled for its target (#pragma GCC target) and is only called after
// a run-time CPU check.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "engine/util/dtype.h"

namespace specscope::cpu::detail {

struct Bf16Panels;  // bf16_panels.h

struct LinearArgs {
  const float* X;     // [n, k]
  int n;
  int k;
  const void* W;      // [m, k] of wtype
  DType wtype;        // F32, F16 or BF16
  const float* bias;  // [m] or null
  float* Y;           // [n, m]
  int m;
  const Bf16Panels* panels = nullptr;  // W repacked for the bf16 dot kernel (bf16_panels.h), or null
  // F16 weights on the fast path: X holds the activations rounded to f16 (as f32), and Xh the same values' f16
  // bits (row stride k), which the one-row kernel reads at half the bytes; null when a row kept its f32 values.
  const uint16_t* Xh = nullptr;
};

// Computes output columns (weight rows) [r0, r1) of Y for all n tokens. `scratch` holds at least
// scratch_floats(k) floats, 64-byte aligned, private to the calling thread.
using RowsFn = void (*)(const LinearArgs& a, int r0, int r1, float* scratch);

using ConvertFn = void (*)(DType t, const void* src, float* dst, size_t count);

size_t scratch_floats(int k);

void rows_scalar(const LinearArgs& a, int r0, int r1, float* scratch);
void rows_avx2(const LinearArgs& a, int r0, int r1, float* scratch);
void convert_avx2(DType t, const void* src, float* dst, size_t count);
// One activation row rounded to f16 for the f16 fast path (matmul.h): xh its f16 bits (round to nearest even, F16C)
// and xr their f32 values. False, writing nothing, when some |x| >= 65520 or is infinite (f16 would make it
// infinite): that row keeps its f32 values. Needs AVX2 and F16C (matmul_avx2.cpp).
bool to_f16_row_avx2(const float* x, int k, float* xr, uint16_t* xh);
void rows_avx512(const LinearArgs& a, int r0, int r1, float* scratch);
void convert_avx512(DType t, const void* src, float* dst, size_t count);

// Software prefetch (to L2) of a block of weight rows, a few lines per k step from inside compute-bound
// tiles that read cached data, so that the weight stream from memory goes on while they run.
struct RowPrefetch {
  const char* row = nullptr;  // current row of the block
  size_t row_stride = 0;      // bytes between rows
  int lines_per_row = 0;
  int col = 0;                // next line in the current row
  int rows_left = 0;
  int per_step = 0;           // lines per call of step()
  inline void step() {
    for (int i = 0; i < per_step && rows_left > 0; ++i) {
      __builtin_prefetch(row + size_t(col) * 64, 0, 2);
      if (++col == lines_per_row) {
        col = 0;
        row += row_stride;
        --rows_left;
      }
    }
  }
};

// A tile's view of a RowPrefetch: a local copy through its loop, written back when the tile ends. Read through the
// caller's pointer, the fields were loaded and stored at every step, ~30% of a cached tile's time (perf, f16 at
// n = 32); a local copy the compiler keeps in registers.
class TileRowPrefetch {
 public:
  explicit TileRowPrefetch(RowPrefetch* shared) : shared_(shared), local_(shared ? *shared : RowPrefetch{}) {}
  TileRowPrefetch(const TileRowPrefetch&) = delete;
  TileRowPrefetch& operator=(const TileRowPrefetch&) = delete;
  ~TileRowPrefetch() {
    if (shared_) *shared_ = local_;
  }
  inline void step() { local_.step(); }

 private:
  RowPrefetch* shared_;
  RowPrefetch local_;
};

// One-token products over weight rows of a page or more (the weights of 1B-class models) go one row at a time
// instead of four, so each thread reads its rows as one sequential stream, which this machine's prefetchers follow
// better than four interleaved ones (bench/weight_stream.c; bench/results/one_row_stream_2026-11-28.txt). Used by
// the bf16 dot kernel (matmul_bf16dot.cpp) and the f16 widening kernel (matmul_avx512.cpp); each sums a row exactly
// as its 4-row tiles do, so results do not change.
inline constexpr size_t kOneRowMinBytes = 4096;
// How far ahead of the row being read the one-row kernels prefetch (4-64 KB measured alike).
inline constexpr size_t kOneRowPrefetchBytes = 16384;
inline bool one_row_stream(int k, size_t elem_size) { return size_t(k) * elem_size >= kOneRowMinBytes; }
// The rows ahead that kOneRowPrefetchBytes reaches, at least the next one.
inline int one_row_prefetch_rows(int k, size_t elem_size) {
  return int(std::max<size_t>(1, kOneRowPrefetchBytes / (size_t(k) * elem_size)));
}

// Every how many 64-byte lines of a row the one-row kernels prefetch the line kOneRowPrefetchBytes ahead (0: never).
// Measured on the 1B-shaped files in one process, the settings alternated round by round (bench/kernel_ab.cpp,
// 40 rounds; bench/results/cpu_one_row_prefetch_2026-11-30/): the bf16 dot kernel, one instruction per line,
// decodes 1.088x faster prefetching every 4th line than every line (faster in 36 of 40 rounds; none at all: 1.032x),
// the adjacent-line and stream prefetchers bringing the rest; the f16 kernel, two conversions and two FMAs per
// line, is fastest with every line (every 4th: 0.82x, none: 0.90x) when it reads f32 activations (the exact path);
// reading the f16 fast path's f16 activations, half the bytes, it is fastest with none (1.038x every line of the f32
// kernel, better in 10 of 10 rounds; every line 0.96x of none: bench/results/cpu_f16_activations_2026-11-30/).
// On Intel every kernel wants every line instead. A 2-core Sapphire Rapids, runs alternated in one shell loop
// (bench/results/llamacpp_1b_spr_2026-12-05/one_row_prefetch.txt):
// - the 1B-shaped BF16 file decoded at 14.6-15.3 tok/s with every line, 11.3-11.7 with every 4th or 2nd line (the
//   one-token forward 65-67 against 86-87 ms);
// - the F16 file, f16 activations, 15.0-15.2 tok/s with every line, 13.2-13.4 with none, 8.8-8.9 with every 4th.
// So the defaults follow the vendor (one_row_prefetch_default).
// SPECSCOPE_ONE_ROW_PREFETCH=N, or set_one_row_prefetch_lines(N), sets all (N = 0: never); -1 restores these defaults.
enum class OneRowKernel { Bf16Dot, F16, F16Bits };  // bf16 dot; f16 widened against f32 / against f16 activations
// Every line (1) on Intel CPUs; elsewhere bf16 dot 4, f16 1, f16 bits 0 (the measurements above).
int one_row_prefetch_default(OneRowKernel kernel);

// A kernel tuning value forced from the environment variable `env` (N >= 0) or in process (set; bench/kernel_ab.cpp
// alternates settings within one process because this VM's memory speed swings too much between processes to compare
// them), else each kernel's own default. Changing it between forwards is safe; during one it is not.
class TuningOverride {
 public:
  explicit TuningOverride(const char* env);
  long value_or(long kernel_default) const {
    const long forced = forced_.load(std::memory_order_relaxed);
    return forced >= 0 ? forced : kernel_default;
  }
  void set(long value) { forced_.store(value < 0 ? -1 : value); }  // negative: the defaults again

 private:
  std::atomic<long> forced_;
};

// The lines setting a one-row kernel uses: the forced value (below) or its default (one_row_prefetch_default).
int one_row_prefetch_lines(OneRowKernel kernel);
void set_one_row_prefetch_lines(int lines);
// How many groups of panels ahead the bf16 panel tiles prefetch (matmul_bf16dot.cpp; 0: never): the kernel's default,
// or SPECSCOPE_PANEL_AHEAD=N / set_panel_prefetch_groups(N) (-1 restores the default).
int panel_prefetch_groups(int kernel_default);
void set_panel_prefetch_groups(long groups);
// Slices (S::kWidth rows each) a group of one-token tiles of the widening panel kernel reads together
// (bf16_widen_panels.h): the instruction set's default (S::pair_slices(1)), or SPECSCOPE_WIDEN_SLICES=N /
// set_widen_slices_one_token(N), clamped to 1-4 (-1 restores the default). Only the grouping changes, never a bit.
int widen_slices_one_token(int kernel_default);
void set_widen_slices_one_token(long slices);
// Where the bf16 panel tiles of several tokens prefetch to: 1 the first-level cache, 0 the second, as one-token
// tiles always do; SPECSCOPE_PANEL_L1=N / set_panel_prefetch_l1(N) (-1 restores the default). The default follows
// the first-level data cache: L1 where it holds 48 KB or more (Zen 5: the base's 8-token step 0.90-0.98x the time
// with L1), L2 where it is smaller or unknown (Zen 4, 32 KB: L1 cost 1.12x the time at 8 tokens, 1.42x at 4;
// bench/results/cpu_zen4_host_2026-12-04/kernel_ab_step*_pl1*.txt).
constexpr long kPanelL1MinBytes = 48 * 1024;
bool panel_l1_suits(long l1d_bytes);
bool panel_prefetch_l1();
void set_panel_prefetch_l1(long on);
// The one-row kernels prefetch at each element k of a row where (k & mask) == 0: every `lines`-th 64-byte line of
// `elem_size`-byte elements. -1 when `lines` is 0 (never).
inline int one_row_prefetch_mask(int lines, size_t elem_size) {
  return lines > 0 ? lines * int(64 / elem_size) - 1 : -1;
}

// The f32/f16/bf16 row kernel linear() uses now (the instruction set picked at run time, or set_isa()'s).
RowsFn active_rows();

// Rows per weight panel the tiled kernels reuse at once (a multiple of 4), for a given k, number of token tiles
// and weight size in bytes.
int panel_rows(int k, int ntiles, size_t weight_bytes);
// Length of the k blocks the tiles split the dot products of `weight_bytes`-byte weights into (a multiple of 16).
// A function of the weights alone, never of the number of tokens: batch invariance rests on it.
int k_block(int k, size_t weight_bytes);
// Tuning: force k_block()'s block length / panel_rows()'s rows (0: the defaults again). Only between forwards.
void set_k_block(int kc);
void set_panel_rows(int rows);

}  // namespace specscope::cpu::detail
