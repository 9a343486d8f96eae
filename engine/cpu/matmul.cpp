// linear(): dispatch, threading, the OpenBLAS path for large n, the portable scalar kernel and the reference.
//
// Plan of one call, Y[n, m] = X[n, k] W[m, k]^T:
//  * n < blas_min_tokens(dtype): the m output columns (weight rows) are shared out in contiguous ranges among
//    the engine's thread team (run_team_units, thread_pool.h, in units of 4 rows; each member starts on its own
//    range and takes over the back of a slower one's when it runs out); each weight row streams from memory once for
//    all n tokens with register tiles (matmul_avx512.cpp / matmul_avx2.cpp, or rows_scalar below). With
//    several token tiles, a panel of rows is reused from cache by every tile (f16/bf16 widened in registers
//    each time; f32 with many tiles from a compact copy in a thread-private scratch buffer).
//  * n >= blas_min_tokens(dtype) (prefill, and only with an OpenBLAS that has kernels for this CPU):
//    cblas_sgemm, on W directly when f32, else on panels of rows widened to f32 into a scratch buffer.
#include "engine/cpu/matmul.h"
#include "engine/cpu/matmul_quant.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/cpu/bf16_panels.h"
#include "engine/cpu/weight_form.h"
#include "engine/cpu/matmul_amx.h"
#include "engine/cpu/matmul_bf16dot.h"
#include "engine/cpu/matmul_bf16widen.h"
#include "engine/cpu/isa_dispatch.h"
#include "engine/cpu/matmul_kernels.h"
#include "engine/cpu/product_units.h"
#include "engine/cpu/op_profile.h"
#include "engine/cpu/quant_int8.h"
#include "engine/cpu/thread_pool.h"
#include "engine/util/error.h"
#include "engine/util/widen.h"

namespace specscope::cpu {
namespace detail {

namespace {
// Tuning overrides of k_block() and panel_rows() (0: the defaults below); from the environment, or set in-process by
// bench/kernel_ab.cpp, which alternates settings within one process because this VM's memory speed swings too much
// between processes to compare them. Changing one between forwards is safe; changing it during one is not.
int env_setting(const char* name) {
  const char* e = std::getenv(name);
  return e ? std::max(0, std::atoi(e)) : 0;
}
std::atomic<int> g_k_block{env_setting("SPECSCOPE_MATMUL_KBLOCK")};
std::atomic<int> g_panel_rows{env_setting("SPECSCOPE_MATMUL_PANEL_ROWS")};
}  // namespace

void set_k_block(int kc) { g_k_block.store(std::max(0, kc)); }
void set_panel_rows(int rows) { g_panel_rows.store(std::max(0, rows)); }

int k_block(int k, size_t weight_bytes) {
  // 2-byte weights are widened in registers from the cached panel block, which is then half the bytes of an f32
  // one: blocks of 2048 measured 9-17% faster than 512 at 8, 16 and 32 tokens on the 1B-shaped F16 file (fewer
  // reductions, one per 2048 products instead of 512), in one process, alternated (bench/kernel_ab.cpp;
  // bench/results/cpu_f16_in_place_2026-11-30/; measured with the AVX-512 tiles only, the AVX2 ones share it).
  // f32 rows keep 512.
  const int forced = g_k_block.load(std::memory_order_relaxed);
  const int kc = forced > 0 ? std::max(16, forced / 16 * 16) : weight_bytes == 2 ? 2048 : 512;
  return k <= kc + kc / 2 ? k : kc;  // don't leave a short last block
}

int panel_rows(int k, int ntiles, size_t weight_bytes) {
  // Rows of W whose k-block (P x k_block(k) weights, up to ~32 KB) is reused from L1/L2 by every token tile,
  // while each token tile is reused by the P / 4 row groups. Few tiles: small panels, so the weight stream
  // restarts sooner (measured, 26M f16 stack, one thread: n = 8 about 1.5x faster with 8 rows than 16);
  // many tiles: bigger panels, fewer passes over X. Overridable for tuning: SPECSCOPE_MATMUL_PANEL_ROWS.
  const int forced = g_panel_rows.load(std::memory_order_relaxed);
  if (forced > 0) return std::max(4, (std::min(forced, 64) + 3) / 4 * 4);
  const int by_k = std::clamp(8192 / std::max(1, std::min(k, k_block(k, weight_bytes))), 4, 32) / 4 * 4;
  return std::min(by_k, ntiles <= 2 ? 8 : ntiles <= 5 ? 16 : 32);
}

TuningOverride::TuningOverride(const char* env) : forced_(-1) {
  const char* e = std::getenv(env);
  if (e && *e) forced_.store(std::max(0L, std::atol(e)));
}

namespace {
TuningOverride g_one_row_prefetch{"SPECSCOPE_ONE_ROW_PREFETCH"};
TuningOverride g_panel_ahead{"SPECSCOPE_PANEL_AHEAD"};
TuningOverride g_panel_l1{"SPECSCOPE_PANEL_L1"};
TuningOverride g_widen_slices{"SPECSCOPE_WIDEN_SLICES"};
}  // namespace

int one_row_prefetch_default(OneRowKernel kernel) {
  static const bool intel = __builtin_cpu_is("intel");
  if (intel) return 1;
  switch (kernel) {
    case OneRowKernel::Bf16Dot: return 4;
    case OneRowKernel::F16: return 1;
    case OneRowKernel::F16Bits: return 0;
  }
  return 1;
}
int one_row_prefetch_lines(OneRowKernel kernel) {
  return int(g_one_row_prefetch.value_or(one_row_prefetch_default(kernel)));
}
void set_one_row_prefetch_lines(int lines) { g_one_row_prefetch.set(lines); }
int panel_prefetch_groups(int kernel_default) { return int(g_panel_ahead.value_or(kernel_default)); }
void set_panel_prefetch_groups(long groups) { g_panel_ahead.set(groups); }
int widen_slices_one_token(int kernel_default) {
  return int(std::clamp(g_widen_slices.value_or(kernel_default), 1L, 4L));
}
void set_widen_slices_one_token(long slices) { g_widen_slices.set(slices); }
bool panel_l1_suits(long l1d_bytes) { return l1d_bytes >= kPanelL1MinBytes; }
bool panel_prefetch_l1() {
  // Read once: the first-level data cache does not change under a running process.
  static const long by_cache = panel_l1_suits(sysconf(_SC_LEVEL1_DCACHE_SIZE)) ? 1 : 0;
  return g_panel_l1.value_or(by_cache) != 0;
}
void set_panel_prefetch_l1(long on) { g_panel_l1.set(on); }

size_t scratch_floats(int k) { return size_t(64) * size_t(std::max(k, 1)) + 64; }

namespace {

// Dot product with 8 independent partial sums (vectorizable without reassociation flags).
inline float dot(const float* x, const float* w, int k) {
  float s[8] = {};
  int i = 0;
  for (; i + 8 <= k; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += x[i + j] * w[i + j];
  for (; i < k; ++i) s[i & 7] += x[i] * w[i];
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

}  // namespace

void rows_scalar(const LinearArgs& a, int r0, int r1, float* scratch) {
  const int k = a.k, m = a.m;
  const size_t esz = dtype_size(a.wtype);
  const int P = panel_rows(k, 1, esz);
  for (int p0 = r0; p0 < r1; p0 += P) {
    const int pr = std::min(P, r1 - p0);
    const float* wp;
    if (a.wtype == DType::F32) {
      wp = static_cast<const float*>(a.W) + size_t(p0) * k;
    } else {
      widen_to_f32(a.wtype, static_cast<const char*>(a.W) + size_t(p0) * k * esz, scratch, size_t(pr) * k);
      wp = scratch;
    }
    for (int t = 0; t < a.n; ++t) {
      const float* x = a.X + size_t(t) * k;
      float* y = a.Y + size_t(t) * m + p0;
      for (int r = 0; r < pr; ++r) y[r] = dot(x, wp + size_t(r) * k, k) + (a.bias ? a.bias[p0 + r] : 0.f);
    }
  }
}

}  // namespace detail

namespace {

using detail::ConvertFn;
using detail::LinearArgs;
using detail::RowsFn;

bool cpu_has_avx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}
bool cpu_has_avx512() {
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

using WidenPanelsFn = void (*)(const float*, int, const detail::Bf16Panels&, const float*, float*, int, int);

struct Dispatch {
  Isa isa = Isa::Scalar;
  RowsFn rows = detail::rows_scalar;
  ConvertFn convert = widen_to_f32;
  WidenPanelsFn widen_panels = nullptr;  // bf16 panels widened in registers (bf16_widen_panels.h)
};

Dispatch make_dispatch(Isa want) {
  if (want == Isa::Auto) {
    const int allowed = isa_lanes_allowed_by_env();
    want = allowed >= 16 ? Isa::Avx512 : allowed == 8 ? Isa::Avx2 : Isa::Scalar;
  }
  if (want == Isa::Avx512 && cpu_has_avx512())
    return {Isa::Avx512, detail::rows_avx512, detail::convert_avx512, detail::panels_bf16widen_avx512};
  if ((want == Isa::Avx512 || want == Isa::Avx2) && cpu_has_avx2())
    return {Isa::Avx2, detail::rows_avx2, detail::convert_avx2, detail::panels_bf16widen_avx2};
  return {};
}

Dispatch& dispatch() {
  static Dispatch d = make_dispatch(Isa::Auto);
  return d;
}

// Whether the OpenBLAS we run against uses kernels of this CPU's generation. OpenBLAS 0.3.21 (Debian 12)
// does not know Sapphire/Emerald Rapids and falls back to its Prescott (SSE3) kernels there, 3-5x slower
// than the tiled kernels at every n (OPENBLAS_CORETYPE=SkylakeX fixes it).
bool blas_core_is_modern() {
  static const bool modern = [] {
    const char* c = openblas_get_corename();
    std::string name = c ? c : "";
    for (auto& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    for (const char* good : {"haswell", "skylakex", "cooperlake", "sapphirerapids", "zen"})
      if (name == good) return true;
    return false;
  }();
  return modern;
}

// n at or above which the product goes to OpenBLAS, when not overridden. Measured on the development
// machine (2-core Emerald Rapids, OpenBLAS forced to its SkylakeX kernels; bench/matmul_bench.cpp and the
// crossover table in the report): f32 sgemm overtakes the tiled kernel around n = 96-128; for f16/bf16 the
// tiled kernel widens each weight once while the BLAS path pays a separate widening pass, so later.
int default_blas_min_tokens(DType t, Isa isa) {
  if (isa == Isa::Scalar) return 8;  // any OpenBLAS beats the portable loops
  if (!blas_core_is_modern()) return INT_MAX;
  return t == DType::F32 ? 128 : 256;
}
std::atomic<int> g_blas_override{0};  // 0: the defaults above
thread_local bool t_variant_allowed = true;  // see BatchVariantKernels
// Below this many multiply-adds a call runs on the calling thread only (a fork/join costs ~1-3 us).
constexpr size_t kMinParallelMacs = size_t(1) << 17;

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};

// A growable buffer, 64-byte aligned: the tiles' vector loads from its start never straddle a cache line (activations
// in a std::vector, 16-byte aligned, made the f16 path's 8-token forward 3% slower than from the caller's X).
class AlignedScratch {
 public:
  float* get(size_t floats) {
    if (cap_ < floats) {
      const size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
      buf_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
      if (!buf_) throw std::bad_alloc();
      cap_ = bytes / sizeof(float);
    }
    return buf_.get();
  }

 private:
  std::unique_ptr<float, AlignedFree> buf_;
  size_t cap_ = 0;
};

// This thread's scratch buffer, at least `floats` long, 64-byte aligned.
float* thread_scratch(size_t floats) {
  thread_local AlignedScratch scratch;
  return scratch.get(floats);
}

int weight_dims(const TensorView& W, const char* what, int* k) {
  SPEC_INPUT_CHECK(W.shape.size() == 2, W.name, std::string(what) + ": weight must be 2-D, got " + W.shape_str());
  SPEC_INPUT_CHECK(W.dtype == DType::F32 || W.dtype == DType::F16 || W.dtype == DType::BF16, W.name,
                   std::string(what) + ": unsupported weight type " + std::string(dtype_name(W.dtype)));
  SPEC_INPUT_CHECK(W.shape[0] >= 0 && W.shape[1] >= 0 && W.shape[0] <= INT_MAX && W.shape[1] <= INT_MAX, W.name,
                   std::string(what) + ": bad weight shape " + W.shape_str());
  SPEC_INPUT_CHECK(W.data != nullptr || W.numel() == 0, W.name, std::string(what) + ": weight has no data");
  *k = int(W.shape[1]);
  return int(W.shape[0]);
}

void fill_bias_or_zero(const LinearArgs& a) {
  for (int t = 0; t < a.n; ++t) {
    float* y = a.Y + size_t(t) * a.m;
    if (a.bias)
      std::memcpy(y, a.bias, size_t(a.m) * sizeof(float));
    else
      std::memset(y, 0, size_t(a.m) * sizeof(float));
  }
}

// OpenBLAS runs single-threaded inside each member of the engine's team (thread_pool.h): its own pthreads pool
// would spin for a long while after every call, on the cores the next decoding steps need.
void use_one_blas_thread() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

void linear_blas(const LinearArgs& a, const Dispatch& d) {
  use_one_blas_thread();
  const int n = a.n, m = a.m, k = a.k;
  float beta = 0.f;
  if (a.bias) {
    fill_bias_or_zero(a);
    beta = 1.f;
  }
  const char* W = static_cast<const char*>(a.W);
  const size_t esz = dtype_size(a.wtype);
  // The members share out 64-row units (output columns, run_team_units) and multiply them one unit per call:
  // OpenBLAS's result for an output may depend on how many columns the call has (edge kernels sum in another
  // order), so calls sized by the thread count made the logits depend on it (a prefill on 1 thread, as the
  // fork/join back-off runs it, differed in the last bits from the same prefill on 2: prefill_interrupt_test).
  const int units = (m + 63) / 64;
  run_team_units(units, size_t(m) * size_t(k) * size_t(n), kMinParallelMacs, [&](int u0, int u1) {
    float* panel = a.wtype == DType::F32 ? nullptr : thread_scratch(size_t(64) * k);
    for (int u = u0; u < u1; ++u) {
      const int r0 = u * 64, rows = std::min(m, r0 + 64) - r0;
      const float* Wf = static_cast<const float*>(a.W) + size_t(r0) * k;
      if (panel) {  // widened 64 rows at a time
        d.convert(a.wtype, W + size_t(r0) * k * esz, panel, size_t(rows) * k);
        Wf = panel;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, rows, k, 1.f, a.X, k, Wf, k, beta, a.Y + r0, m);
    }
  });
}

// bf16 weights go through vdpbf16ps (matmul_bf16dot.cpp) on CPUs with AVX512-BF16, unless the exact path is asked
// for (set_quant_exact: the products then equal the f32 products of the bf16 weights, as transformers computes).
std::atomic<bool> g_bf16_dot{[] {
  const char* e = std::getenv("SPECSCOPE_BF16_DOT");
  return !(e && std::string(e) == "0");
}()};

bool bf16dot_active(const Dispatch& d) {
  static const bool cpu_ok = __builtin_cpu_supports("avx512bf16");
  return cpu_ok && d.isa == Isa::Avx512 && !quant_exact() && g_bf16_dot.load(std::memory_order_relaxed);
}

// On the bf16 dot path, weights whose panels AMX takes go through the tiles (matmul_amx.cpp) on CPUs with AMX-BF16,
// unless SPECSCOPE_AMX=0 (or set_amx(false)): the same rounding of the activations, other bits, and the choice made
// per weight, never per number of tokens.
std::atomic<bool> g_amx{[] {
  const char* e = std::getenv("SPECSCOPE_AMX");
  return !(e && std::string(e) == "0");
}()};

bool amx_active(const Dispatch& d) {
  return bf16dot_active(d) && g_amx.load(std::memory_order_relaxed) && detail::amx_bf16_usable();
}

// bf16 weights elsewhere (AVX2 CPUs, AVX-512 ones without BF16, or with the bf16 dot kernel turned off) are widened
// from their panels (bf16_widen_panels.h), unless the exact path is asked for: the same exact weights and f32
// activations, summed as two chains an output instead of in the row tiles' blocks, so the exact path keeps the tiles
// that the parity tests were measured on.
bool bf16widen_active(const Dispatch& d) { return d.widen_panels && !quant_exact() && !bf16dot_active(d); }

// f16 weights multiply activations rounded to f16 (as ggml's f16 dot does), unless the exact path is asked for: the
// tiles read the rounded values as f32 and the one-row kernel their f16 bits, half the bytes beside the weights.
bool f16act_active(const Dispatch& d) { return d.isa != Isa::Scalar && !quant_exact(); }

// The products' X rounded to f16 once for all of them (f16act_active), into the calling thread's buffers: each
// product then reads those values as f32 (and, when every row was rounded, their f16 bits). A row with an activation
// f16 cannot hold keeps its f32 values.
void round_activations_to_f16(std::vector<LinearArgs>& products) {
  thread_local AlignedScratch rounded, bits;
  const LinearArgs& a0 = products.front();
  const size_t nk = size_t(a0.n) * size_t(a0.k);
  float* xr = rounded.get(nk);
  uint16_t* xh = reinterpret_cast<uint16_t*>(bits.get((nk + 1) / 2));
  bool all_rounded = true;
  for (int t = 0; t < a0.n; ++t) {
    const size_t off = size_t(t) * size_t(a0.k);
    if (!detail::to_f16_row_avx2(a0.X + off, a0.k, xr + off, xh + off)) {
      std::memcpy(xr + off, a0.X + off, sizeof(float) * size_t(a0.k));
      all_rounded = false;
    }
  }
  for (auto& a : products) {
    a.X = xr;
    a.Xh = all_rounded ? xh : nullptr;
  }
}

// Which bf16 weights of width k are packed into panels: on either panel kernel those narrower than kPanelMaxK, and
// on the AMX tiles the wider ones whose panels the tiles take too. For those (the 1B-class matrices) the tiles make a
// forward of 8-16 tokens cost what one token costs (a 1B-shaped BF16 file: 75-81 ms against 66-76 for one token, where
// vdpbf16ps took 117-199 ms) and prefill 3.5x faster, one token as fast as the one-row kernel
// (bench/results/cpu_amx_large_k_2026-12-05/). The panels replace the resident copy (resident_weights.cpp asks
// bf16_weights_repacked), so memory does not grow. Fixed per weight for a given setting, as amx_takes requires.
bool bf16_repacked(int k, const Dispatch& d) {
  if (k <= 0 || !(bf16dot_active(d) || bf16widen_active(d))) return false;
  return k < detail::kPanelMaxK || (amx_active(d) && detail::amx_takes_k(k));
}

// The panel-packed copy of a bf16 weight when a panel kernel computes it (packed on first use), else null.
const detail::Bf16Panels* panels_for(const TensorView& W, const Dispatch& d) {
  return W.dtype == DType::BF16 && W.shape.size() == 2 && bf16_repacked(int(W.cols()), d) ? detail::bf16_panels_for(W)
                                                                                         : nullptr;
}

// Products of one X with several weights (all of one dense dtype and width k) in one fork of the team: the
// union of their 4-row blocks is shared out in contiguous ranges (run_team_units). Each output row is computed exactly as
// a lone linear() computes it; only the number of forks changes (a decoder layer's q/k/v and gate/up products are
// ~20-60 us each on small models, where a fork/join is a visible share).
void run_products(const LinearArgs* given, int count, const Dispatch& d) {
  const LinearArgs* products = given;
  thread_local std::vector<LinearArgs> rounded;
  if (given[0].wtype == DType::F16 && f16act_active(d)) {
    rounded.assign(given, given + count);
    round_activations_to_f16(rounded);
    products = rounded.data();  // the caller's: inside the lambda `rounded` would name each worker's own
  }
  const LinearArgs& a0 = products[0];
  const bool bf16dot = a0.wtype == DType::BF16 && bf16dot_active(d);
  const bool amx = bf16dot && amx_active(d);
  const size_t kp = (size_t(a0.k) + 31) / 32 * 32;
  const uint16_t* xbp = nullptr;
  if (bf16dot) {  // X rounded to bf16 once for all the products
    thread_local std::vector<uint16_t> xb;
    if (xb.size() < size_t(a0.n) * kp) xb.resize(size_t(a0.n) * kp);
    detail::to_bf16_rows(a0.X, a0.n, a0.k, xb.data(), kp);
    xbp = xb.data();  // the caller's buffer: inside the lambda `xb` would name each worker's own
  }
  // Work units: blocks of 4 weight rows, or of 16 (one panel) for panel-packed weights (panels_for packs them only for
  // the bf16 dot or the widening kernel: the dot where it is active, else the widening one).
  auto unit_rows = [&](const LinearArgs& a) { return a.panels ? 16 : 4; };
  auto units_of = [&](int i) { return (products[i].m + unit_rows(products[i]) - 1) / unit_rows(products[i]); };
  const int units = detail::total_product_units(count, units_of);
  size_t macs = 0;
  for (int i = 0; i < count; ++i) macs += size_t(products[i].m) * size_t(a0.k) * size_t(a0.n);
  const size_t sfloats = detail::scratch_floats(a0.k);
  run_team_units(units, macs, kMinParallelMacs, [&](int u0, int u1) {
    detail::for_each_product_units(count, u0, u1, units_of, [&](int i, int b0, int b1) {
      const LinearArgs& a = products[i];
      const int r0 = b0 * unit_rows(a), r1 = std::min(a.m, b1 * unit_rows(a));
      if (a.panels && amx && detail::amx_takes(*a.panels))
        detail::panels_amx(xbp, kp, a.n, *a.panels, a.bias, a.Y, b0, b1);
      else if (a.panels && bf16dot)
        detail::panels_bf16dot(xbp, kp, a.n, *a.panels, a.bias, a.Y, b0, b1);
      else if (a.panels)
        d.widen_panels(a.X, a.n, *a.panels, a.bias, a.Y, b0, b1);
      else if (bf16dot)
        detail::rows_bf16dot(a.X, xbp, kp, a.n, a.k, static_cast<const uint16_t*>(a.W), a.bias, a.Y, a.m, r0, r1);
      else
        d.rows(a, r0, r1, thread_scratch(sfloats));
    });
  });
}

// The path one dense product takes: false when it went to OpenBLAS (or had nothing to compute) and is done.
bool tiled_product(const LinearArgs& a, const Dispatch& d) {
  if (a.n <= 0 || a.m == 0) return false;
  if (a.k == 0) {
    fill_bias_or_zero(a);
    return false;
  }
  if (a.panels || (a.wtype == DType::BF16 && bf16dot_active(d))) return true;
  const int ov = g_blas_override.load(std::memory_order_relaxed);
  if (t_variant_allowed && a.n >= (ov > 0 ? ov : default_blas_min_tokens(a.wtype, d.isa))) {
    linear_blas(a, d);
    return false;
  }
  return true;
}

// Block-quantized weights of one width on the integer path (q/k/v or gate/up of a GGUF model, whose types may
// differ): X quantized once and one fork for all of them (quant_int8.h). False when that path does not apply.
// The integer-path products of `items`: LinearOutput ones share one X, so all are k wide; LinearInput ones each have
// their own X and may differ in width (a decode step's routed experts' down products beside Qwen2-MoE's wider shared
// one), and k is then the first one's. False when one does not take that path (the exact path, dense or requantized
// weights, another width where they share X).
template <class Item>
bool int8_products(std::span<const Item> items, std::vector<detail::Int8Product>& products, int& k) {
  if (quant_exact()) return false;
  k = -1;
  for (const auto& o : items) {
    detail::Int8Type type;
    if (!dtype_is_block(o.W->dtype) || o.W->requantized || !detail::int8_type(o.W->dtype, &type)) return false;
    int ko = 0;
    block_weight_dims(*o.W, "linear", &ko);
    if (ko <= 0) return false;
    const float* own_x = nullptr;
    if constexpr (requires { o.X; }) own_x = o.X;
    else if (k >= 0 && ko != k) return false;
    if (k < 0) k = ko;
    products.push_back({type, o.W, o.bias, o.Y, own_x});
  }
  return k > 0;
}

// What a call of several products adds to the profile: their multiply-adds and weight bytes.
template <class Item>
ProfileScope products_profile(std::span<const Item> items, int n) {
  double macs = 0, bytes = 0;
  for (const auto& o : items) {
    macs += double(o.W->numel()) * std::max(n, 0);
    bytes += double(o.W->nbytes());
  }
  return ProfileScope(Op::Linear, macs, bytes);
}

bool linear_int8_shared_input(const float* X, int n, std::span<const LinearOutput> outputs) {
  std::vector<detail::Int8Product> products;
  int k = 0;
  if (!int8_products(outputs, products, k)) return false;
  detail::linear_int8_shared(X, n, k, products);
  return true;
}

}  // namespace

void linear(const float* X, int n, const TensorView& W, const float* bias, float* Y) {
  if (W.requantized) return linear_requantized(X, n, W, bias, Y);  // a form a context asked for (weight_form.h)
  const ProfileScope profile(Op::Linear, double(W.numel()) * std::max(n, 0), double(W.nbytes()));
  if (dtype_is_block(W.dtype)) return linear_quant(X, n, W, bias, Y);  // GGUF weights (matmul_quant.h)
  int k = 0;
  const int m = weight_dims(W, "linear", &k);
  const Dispatch d = dispatch();
  const LinearArgs a{X, n, k, W.data, W.dtype, bias, Y, m, panels_for(W, d)};
  if (tiled_product(a, d)) run_products(&a, 1, d);
}

void linear_shared_input(const float* X, int n, std::span<const LinearOutput> outputs) {
  if (outputs.empty()) return;
  const ProfileScope profile = products_profile(outputs, n);
  if (linear_int8_shared_input(X, n, outputs)) return;
  const DType t = outputs.front().W->dtype;
  bool same = !dtype_is_block(t);
  for (const auto& o : outputs)
    same = same && o.W->dtype == t && o.W->cols() == outputs.front().W->cols() && !o.W->requantized;
  if (!same) {  // block weights, requantized ones (their own kernels) or mixed types: one call each
    for (const auto& o : outputs) linear(X, n, *o.W, o.bias, o.Y);
    return;
  }
  const Dispatch d = dispatch();
  std::vector<LinearArgs> tiled;
  for (const auto& o : outputs) {
    int k = 0;
    const int m = weight_dims(*o.W, "linear", &k);
    const LinearArgs a{X, n, k, o.W->data, t, o.bias, o.Y, m, panels_for(*o.W, d)};
    if (tiled_product(a, d)) tiled.push_back(a);
  }
  if (!tiled.empty()) run_products(tiled.data(), int(tiled.size()), d);
}

void linear_each(int n, std::span<const LinearInput> inputs) {
  std::vector<detail::Int8Product> products;
  int k = 0;
  if (inputs.empty() || !int8_products(inputs, products, k)) {
    for (const auto& in : inputs) linear(in.X, n, *in.W, in.bias, in.Y);
    return;
  }
  const ProfileScope profile = products_profile(inputs, n);
  detail::linear_int8_each(n, products);
}

bool set_bf16_dot(bool on) { return g_bf16_dot.exchange(on); }
bool set_amx(bool on) { return g_amx.exchange(on); }

bool bf16_weights_repacked(int k) { return bf16_repacked(k, dispatch()); }

const char* linear_roofline_path(DType t) {
  detail::Int8Type it;
  if (dtype_is_block(t) && !quant_exact() && detail::int8_type(t, &it)) return "int8 dot";
  if (t == DType::BF16 && amx_active(dispatch())) return "bf16 amx";  // panels of whole tiles (amx_takes)
  if (t == DType::BF16 && bf16dot_active(dispatch())) return "bf16 dot";
  return "f32 fma";
}

void linear_reference(const float* X, int n, const TensorView& W, const float* bias, float* Y) {
  const bool block = dtype_is_block(W.dtype);
  int k = 0;
  const int m = block ? block_weight_dims(W, "linear_reference", &k) : weight_dims(W, "linear_reference", &k);
  std::vector<float> row(size_t(std::max(k, 1)));
  const size_t esz = dtype_size(W.dtype);
  for (int r = 0; r < m; ++r) {
    if (block) dequantize_rows(W, r, 1, row.data());
    else widen_to_f32(W.dtype, static_cast<const char*>(W.data) + size_t(r) * k * esz, row.data(), size_t(k));
    for (int t = 0; t < n; ++t) {
      const float* x = X + size_t(t) * k;
      double s = bias ? double(bias[r]) : 0.0;
      for (int i = 0; i < k; ++i) s += double(x[i]) * double(row[size_t(i)]);
      Y[size_t(t) * m + r] = float(s);
    }
  }
}

void embedding_row(const TensorView& E, int row, float* out) {
  if (dtype_is_block(E.dtype)) return embedding_row_quant(E, row, out);
  int h = 0;
  const int v = weight_dims(E, "embedding", &h);
  SPEC_INPUT_CHECK(row >= 0 && row < v, E.name,
                   "token id " + std::to_string(row) + " out of range [0, " + std::to_string(v) + ")");
  dispatch().convert(E.dtype, static_cast<const char*>(E.data) + size_t(row) * size_t(h) * dtype_size(E.dtype), out,
                     size_t(h));
}

void convert_to_f32(DType t, const void* src, float* dst, size_t count) {
  SPEC_INPUT_CHECK(t == DType::F32 || t == DType::F16 || t == DType::BF16, "",
                   "convert_to_f32: unsupported type " + std::string(dtype_name(t)));
  dispatch().convert(t, src, dst, count);
}

const char* active_isa() {
  switch (dispatch().isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    default: return "scalar";
  }
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::Auto: case Isa::Scalar: return true;
    case Isa::Avx2: return cpu_has_avx2();
    case Isa::Avx512: return cpu_has_avx512();
  }
  return false;
}

Isa set_isa(Isa isa) {
  dispatch() = make_dispatch(isa == Isa::Auto ? Isa::Avx512 : isa);
  return dispatch().isa;
}

BatchVariantKernels::BatchVariantKernels(bool allowed) : previous_(t_variant_allowed) { t_variant_allowed = allowed; }
BatchVariantKernels::~BatchVariantKernels() { t_variant_allowed = previous_; }
bool BatchVariantKernels::allowed() { return t_variant_allowed; }

int set_blas_min_tokens(int n) { return g_blas_override.exchange(std::max(n, 0)); }

int blas_min_tokens(DType t) {
  const int ov = g_blas_override.load();
  return ov > 0 ? ov : default_blas_min_tokens(t, dispatch().isa);
}

namespace detail {

RowsFn active_rows() { return dispatch().rows; }

}  // namespace detail

const char* blas_core() {
  const char* c = openblas_get_corename();
  return c ? c : "?";
}

void prepare_linear(const TensorView& W) {
  if (!W.requantized) (void)panels_for(W, dispatch());
}

}  // namespace specscope::cpu
