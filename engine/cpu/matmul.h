#pragma once
// The linear layer, the one hot operation of CPU inference: Y[n, m] = X[n, k] * W[m, k]^T (+ bias[m]).
//
// W is a PyTorch Linear weight [out = m, in = k], row-major, stored as f32, f16 or bf16 (usually a view
// into a memory-mapped file) and is never converted to f32 as a whole. X and Y are f32, row-major, dense
// (row strides k and m), and must not overlap.
//
// How it is computed (see matmul.cpp): each thread owns a contiguous range of output rows and streams each
// of its weight rows from memory once for all n tokens, with register tiles of 4 weight rows x up to 6
// tokens (AVX-512) or 4 x 3 (AVX2+FMA+F16C); f16 rows are widened with F16C and bf16 rows by shifting, both
// exact. With more tokens than one tile holds, the first tile also writes the widened rows to a small
// cache-resident panel that the other tiles reuse, while software prefetch keeps the weight stream going.
// For n above a measured crossover the product goes to OpenBLAS sgemm (f16/bf16 weights widened panel by
// panel into a scratch buffer), but only with an OpenBLAS that runs kernels for this CPU. The instruction
// set is chosen at run time, so the binary runs on any x86-64; the results of the paths agree to f32
// rounding, not bit for bit (and do not depend on the thread count).
//
// Environment: SPECSCOPE_MATMUL_ISA=scalar|avx2|avx512 (start with a lower kernel family; the per-ISA vector
// kernels of isa_dispatch.h follow it too),
// SPECSCOPE_MATMUL_BACKOFF=0 (never fall back to one thread when the cores are busy, see linear() in
// matmul.cpp), SPECSCOPE_MATMUL_PANEL_ROWS / SPECSCOPE_MATMUL_KBLOCK (tuning only), OMP_NUM_THREADS.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/cpu/thread_pool.h"
#include "engine/util/tensor.h"

namespace specscope::cpu {

// Y[n, m] = X[n, k] * W^T (+ bias, when not null). W: rank 2 {m, k}, dtype F32, F16 or BF16, or one of the
// block-quantized GGUF types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K: computed by linear_quant, see
// matmul_quant.h); anything else throws InputError. Any n >= 1 (n <= 0: no-op). Threads over output rows (thread_pool.h).
void linear(const float* X, int n, const TensorView& W, const float* bias, float* Y);
// Makes now whatever copy of W the kernels will want (the bf16 panels), instead of in the first product that uses
// it: packing a model's weights cost its first step 10-20 ms (the first drafting step of a run, timed as drafting).
void prepare_linear(const TensorView& W);

// Several products of the same X, Y_i = X W_i^T (+ bias_i), in one fork of the thread team when the weights share
// a dense dtype and width (a layer's q/k/v, its gate/up); each Y_i bit-identical to what linear() gives.
struct LinearOutput {
  const TensorView* W;
  const float* bias;  // or null
  float* Y;
};
void linear_shared_input(const float* X, int n, std::span<const LinearOutput> outputs);

// Several products each of its own X (n rows each, every W k wide), Y_i = X_i W_i^T (+ bias_i): in one fork of the
// thread team where every W takes the integer path (block weights), else one call each; each Y_i bit-identical to what
// linear() gives. (A decode step's experts' down products: one fork instead of one per expert.)
struct LinearInput {
  const float* X;
  const TensorView* W;
  const float* bias;  // or null
  float* Y;
};
void linear_each(int n, std::span<const LinearInput> inputs);

// The same product with plain loops and double accumulation (each output rounded once to f32). Slow; the
// yardstick for tests.
void linear_reference(const float* X, int n, const TensorView& W, const float* bias, float* Y);

// Row `row` of an embedding table E [V, H] (f32, f16, bf16 or block-quantized) widened to f32 into out[H].
void embedding_row(const TensorView& E, int row, float* out);

// Fast paths that quantize the activations, taken by default where the CPU has them:
//  * block-quantized weights Q8_0, Q4_0, Q4_K, Q5_K and Q6_K go through integer dot products: each token row
//    quantized to 8 bits per block of 32 once per call (engine/cpu/quant_int8.h states the formula and the error
//    bound: each activation off by at most max|x_block| / 254);
//  * bf16 weights go through vdpbf16ps on CPUs with AVX512-BF16 (matmul_bf16dot.cpp): each activation rounded to
//    bf16 once per call, so off by at most 2^-8 |x| (round to nearest even, 8 significant bits), products and sums in f32:
//    |fast - exact| <= 2^-8 sum_i |w_i x_i| + (f32 rounding of the sums);
//    on CPUs with AMX-BF16 the panel-packed ones (bf16_panels.h) of whole 32-k tiles (amx_takes) go through the tiles
//    instead (matmul_amx.cpp): the same rounding and bound, other bits, chosen per weight and never per token count;
//  * f16 weights multiply activations rounded to f16 once per call (F16C, round to nearest even; as ggml's f16 dot
//    product rounds them), widened back and multiplied and summed in f32 by the same tiles, so off by at most
//    2^-11 |x| each: |fast - exact| <= 2^-11 sum_i |w_i x_i| + (f32 rounding of the sums). A token row with an
//    activation f16 cannot hold (|x| >= 65520, or infinite) keeps its f32 values. The one-token kernel reads the f16
//    bits, half the bytes beside the weight stream (1B-shaped F16 file, decode 1.04-1.06x the f32 activations' in one
//    process: bench/results/cpu_f16_activations_2026-11-30/). Products of n >= the OpenBLAS
//    crossover (a prompt only) keep f32 activations.
// bf16 weights on CPUs without AVX512-BF16 (AVX2, AVX-512) are widened exactly from their panels (bf16_widen_panels.h):
// no activation is rounded, only the order of the f32 sums differs from the exact path's row tiles (each output a
// chain over its even k plus a chain over its odd k).
// A token's outputs never depend on the other tokens of the call. The exact path computes with the weights widened
// (or dequantized) to f32 and f32 activations (results equal to linear_reference up to f32 summation order, as
// transformers computes): set_quant_exact(true), or SPECSCOPE_QUANT_EXACT=1 in the environment. Returns the
// previous setting. Not thread-safe against concurrent linear() calls.
bool set_quant_exact(bool on);
bool quant_exact();
// Off: bf16 weights skip the vdpbf16ps kernel on AVX512-BF16 CPUs and take the exact widening panels that CPUs
// without it take (for tests and A/B measurements; SPECSCOPE_BF16_DOT=0 starts with it off). Returns the previous
// setting.
bool set_bf16_dot(bool on);
// Off: bf16 weights on CPUs with AMX-BF16 take the vdpbf16ps kernel instead of the tiles (matmul_amx.cpp; for tests
// and A/B measurements; SPECSCOPE_AMX=0 starts with it off). Returns the previous setting.
bool set_amx(bool on);

// Whether linear() keeps a second, panel-packed copy of bf16 weights k inputs wide (bf16_panels.h: on CPUs with AVX2
// or AVX-512, outside the exact path, for k below 2048, and on the AMX tiles for wider k that they take; made on first
// use, in place of the resident copy): memory estimates count those weights twice.
bool bf16_weights_repacked(int k);

// Revision of the CPU kernels' speed: part of the key of every cached timing (runs/step_cost.h). Bump it when a kernel
// change moves the step-cost curve, so that machines measure again instead of using stale curves.
inline constexpr const char* kKernelRevision = "2026-12-05c";  // AMX tiles into the outputs, pairs up to 8 tokens

// The roofline path (engine/cpu/roofline.h: "f32 fma", "bf16 dot", "bf16 amx", "int8 dot") linear() computes weights of type
// t on now: what its speed is to be measured against.
const char* linear_roofline_path(DType t);

// Widens `count` elements of type t (F32, F16 or BF16) starting at src to f32. Exact.
void convert_to_f32(DType t, const void* src, float* dst, size_t count);

// --- Introspection and knobs, for tests and benchmarks. Not thread-safe against concurrent linear() calls.
enum class Isa { Auto, Scalar, Avx2, Avx512 };
// The kernel family linear() uses now: "avx512", "avx2" or "scalar".
const char* active_isa();
// Whether this CPU (and OS) can run the given kernel family.
bool isa_supported(Isa isa);
// Forces a kernel family (clamped to what the CPU supports); Auto restores the best one. Returns the active.
Isa set_isa(Isa isa);
// n at or above which linear() hands the product to OpenBLAS sgemm for weights of type t. Default: 128 for
// f32 and 256 for f16/bf16 when OpenBLAS runs kernels for this CPU's generation, never when it does not
// (e.g. OpenBLAS 0.3.21 on Sapphire/Emerald Rapids picks its SSE3 "Prescott" kernels unless
// OPENBLAS_CORETYPE=SkylakeX is set), 8 with the scalar kernels.
int blas_min_tokens(DType t = DType::F32);
// Overrides that threshold for every type (1: always OpenBLAS; INT32_MAX: never); 0 restores the defaults.
// Returns the previous override (0 when the defaults were in effect).
int set_blas_min_tokens(int n);
// Batch-variant kernels: OpenBLAS, and the exact path's fused (1-8 tokens) and row-group (1-2 tokens) kernels
// for block weights, sum in other orders than the tiled f32 kernels, so a row computed through them differs in
// its last bits from the same row computed in a batch of another size. linear() uses them only while they are
// allowed on the calling thread (the default); CpuContext::forward disallows them for every forward but a
// sequence's first (the prompt, which vanilla and every method share), so decoding and verification batches
// stay batch-invariant: a draft-tree row gets exactly the logits it would get alone, which greedy losslessness
// rests on. (The integer path of block weights is batch-invariant at every n.)
class BatchVariantKernels {
 public:
  explicit BatchVariantKernels(bool allowed);
  ~BatchVariantKernels();
  BatchVariantKernels(const BatchVariantKernels&) = delete;
  static bool allowed();  // on the calling thread

 private:
  bool previous_;
};

// The thread team, its cap (set_num_threads), counters and fork/join back-off: engine/cpu/thread_pool.h.
// The kernel set OpenBLAS picked ("SkylakeX", "Haswell", "Prescott", ...).
const char* blas_core();

}  // namespace specscope::cpu
