#pragma once
// Integer dot products for block-quantized weights: the default path of linear_quant for every GGUF block type the
// engine reads, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K (set_quant_exact(true) or SPECSCOPE_QUANT_EXACT=1 selects the exact path, equal to the dequantized model).
// Internal to engine/cpu.
//
// How: each token row of X is quantized once per call to blocks of 32 int8 with one f32 scale per block
// (quantize_act), then every weight block is dotted with the matching activation block in int32 (exact), and
// each block adds one float term. For output (row r, token t), with I_b the exact integer dot of block b:
//   Q8_0, Q4_0, Q5_0  t_b = d_w * float(I_b)            (I_b over the centred codes: Q4_0 q - 8, Q5_0 q - 16)
//   Q4_K, Q5_K  t_b = fma(-(dmin*m_j), float(S_b), (d*sc_j) * float(I_b))   (S_b: sum of the block's q8)
//   Q4_1, Q5_1  t_b = fma(m, float(S_b), d * float(I_b))  (the same, with -m in dmin*m_j's place)
//   Q6_K        t_b = d * float(I_b),  I_b = sc_lo * I_lo + sc_hi * I_hi over its two 16-element halves
//   acc[b % 16] = fma(dx_b, t_b, acc[b % 16])            for b = 0 .. (padded block count - 1)
//   y = ((acc[i] + acc[i+8]) -> (+ i+4) -> (+ i+2) -> (+ i+1)) + (bias, or 0 without one)
// Every kernel (scalar reference, AVX2, AVX-VNNI, AVX512-VNNI) computes exactly this, so they agree bit for bit
// (tests/quant_int8_test.cpp), and a token's outputs do not depend on which other tokens share the call or on the
// thread count (lossless speculative decoding needs the first).
//
// Error bound (against the exact product with the dequantized weights w): a q8 code is round(x / dx) with
// dx = max|x_block| / 127, so each activation is off by at most dx/2 (plus an f32 rounding of ~2^-23 |x|):
//   |fast - exact| <= sum_b (dx_b / 2) * sum_{i in b} |w_i|  +  1e-5 * sum_i |w_i x_i|
// (the second term: f32 rounding of the per-block terms and of the 16-lane sum). On normal data the error is ~0.1 of
// this bound and ~1e-3 of sum |w_i x_i| (quant_int8_test prints both). Scales per 32 activations, also for the
// K-quants (ggml rounds those against one scale per 256), so the bound is the tighter one.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/util/dtype.h"
#include "engine/util/tensor.h"

namespace specscope::cpu::detail {

// Q4_K_Lanes, Q5_K_Lanes, Q6_K_Lanes: Q4_K / Q5_K / Q6_K super-blocks in the lanes layouts of kquant_lanes.h
// (TensorView::lanes), the same values, read by every kernel family (linear_int8_shared uses a weight's lanes copy
// where it has one).
// Q5_0 and Q5_1 are what llama.cpp's Q4_K and Q5_K mixes hold wherever a row is not a multiple of 256 long: most of
// Gemma-3-1B's and Qwen2.5-0.5B's matrices (hidden 1152 and 896).
// Q4_0_Lanes, Q8_0_Lanes: Q4_0 / Q8_0 in units of 8 blocks, their scales then their codes in the order the kernels read
// them (kquant_lanes.h).
// MXFP4 (GPT-OSS's experts; engine/formats/mxfp4.h): blocks of 17 bytes, the E8M0 scale then Q4_0's nibbles; each
// code becomes its doubled E2M1 value plus 16 (a byte table lookup), a 5-bit code offset by 16 as Q5_0's, times the
// block's 2^(e - 128).
enum class Int8Type {
  Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q4_K_Lanes, Q5_K_Lanes, Q6_K_Lanes, Q4_0_Lanes, Q8_0_Lanes, MXFP4
};
// Q8_0 in either layout: signed 8-bit codes, which some kernels multiply by sign rather than offset.
constexpr bool int8_is_q8_0(Int8Type t) { return t == Int8Type::Q8_0 || t == Int8Type::Q8_0_Lanes; }
// The fast path's type for a weight dtype; false for the types it does not cover (float ones).
bool int8_type(DType t, Int8Type* out);
// Whether a type's blocks add a minimum times the block's activation sum (the kernels' fm).
constexpr bool int8_has_mins(Int8Type t) {
  return t == Int8Type::Q4_K || t == Int8Type::Q4_K_Lanes || t == Int8Type::Q5_K || t == Int8Type::Q5_K_Lanes ||
         t == Int8Type::Q4_1 || t == Int8Type::Q5_1;
}

// The layouts of the 32-element legacy blocks with nibble codes, Q4_0, Q4_1, Q5_0 and Q5_1, as every kernel family,
// the scalar reference and int8_group_bytes read them (gguf_quant.h describes the same blocks for dequantization):
// f16 d at byte 0, f16 m at byte 2 where the type has a minimum, the 32-bit word of fifth bits (bit i: element i's)
// at byte qh for the 5-bit types (-1: none), and the 16 bytes of nibbles at byte qs, elements 0-15 the low nibbles
// and 16-31 the high.
struct NibbleBlock {
  int bytes, qs, qh;
  bool has_min;
};
constexpr bool int8_is_nibble_block(Int8Type t) {
  return t == Int8Type::Q4_0 || t == Int8Type::Q4_1 || t == Int8Type::Q5_0 || t == Int8Type::Q5_1;
}
constexpr NibbleBlock nibble_block(Int8Type t) {
  switch (t) {
    case Int8Type::Q4_0: return {18, 2, -1, false};
    case Int8Type::Q4_1: return {20, 4, -1, true};
    case Int8Type::Q5_0: return {22, 6, 2, false};
    case Int8Type::Q5_1: return {24, 8, 4, true};
    default: return {0, 0, -1, false};
  }
}
constexpr int kQ8_0Bytes = 34;  // f16 d, then 32 int8 codes
constexpr int kMxfp4Bytes = 17;  // E8M0 e, then 16 bytes of nibbles (elements 0-15 low, 16-31 high)
// MXFP4 code c as the kernels read it: its doubled E2M1 value (-12..12) plus 16 (kMxfp4Twice, formats/mxfp4.h).
constexpr int8_t kMxfp4Codes[16] = {16, 17, 18, 19, 20, 22, 24, 28, 16, 15, 14, 13, 12, 10, 8, 4};
// The types whose codes carry a fixed offset (the kernels read them as unsigned bytes): log2 of it, which the kernels
// take off as (block's activation sum) << shift: Q8_0's codes made unsigned by adding 128, Q4_0's nibbles are code + 8,
// Q5_0's 5-bit codes code + 16. -1 for the rest (their minimum, or Q6_K's per-half offset, does that job).
constexpr int int8_code_offset_shift(Int8Type t) {
  return int8_is_q8_0(t)                                     ? 7
         : t == Int8Type::Q4_0 || t == Int8Type::Q4_0_Lanes ? 3
         : t == Int8Type::Q5_0 || t == Int8Type::MXFP4      ? 4
                                                            : -1;
}

constexpr int kQ8Block = 32;                   // elements per activation block
constexpr int kQ8Lanes = 16;                   // blocks per group: the lanes of the float accumulation
constexpr int kQ8Group = kQ8Block * kQ8Lanes;  // 512 elements; rows are zero-padded to whole groups

// n activation rows quantized. Padding blocks (past k) have q = 0, d = 0, sums 0.
// The codes of a group of 16 blocks are stored interleaved 4 bytes at a time: 64-byte row j (j = 0..7) holds bytes
// 4j..4j+3 of blocks 0..15 side by side. So one 64-byte load gives a SIMD kernel the same 4 codes of every block of
// the group, and a vpdpbusd lane (4 products) only ever sums codes of one block: 8 of them accumulate each block's
// total in its own lane, with no horizontal sums per token (the weights are transposed to match, once per row).
struct ActQ8 {
  int n = 0, k = 0, kp = 0;   // tokens, row length, row length rounded up to a whole group
  // Row stride of q: kp and 9 cache lines more. kp is a multiple of 512, so at a stride of kp one group (8 lines) of
  // successive tokens would map to the same 8 or 16 L1 sets, and a kernel reading one group of 32 tokens would evict
  // its own codes (at 8192 wide all 32 tokens' lines in 8 sets). An odd stride in lines, 1 more than a multiple of 8,
  // spreads the tokens' 8-line runs over all 64 sets (a stride of kp + 64 still packed 8 tokens into each set there).
  size_t ldq() const { return size_t(kp) + 9 * 64; }
  std::vector<int8_t> q;      // [n][ldq()] round(x / d), in [-127, 127], interleaved per group (see above)
  std::vector<float> d;       // [n][kp / 32] max|x| / 127 (NaN when the block holds a NaN or infinity)
  std::vector<int32_t> s32;   // [n][kp / 32] sum of the block's q
  std::vector<int16_t> s16;   // [n][kp / 16] sum of each half-block's q (Q6_K's scales are per 16)
  int blocks() const { return kp / kQ8Block; }
  const int8_t* qs(int t) const { return q.data() + size_t(t) * ldq(); }
  // Code i (0..31) of block b of token t.
  static size_t code_offset(int b, int i) {
    return size_t(b / kQ8Lanes) * kQ8Group + size_t(i / 4) * 64 + size_t(b % kQ8Lanes) * 4 + size_t(i % 4);
  }
  int code(int t, int b, int i) const { return qs(t)[code_offset(b, i)]; }
  const float* ds(int t) const { return d.data() + size_t(t) * size_t(blocks()); }
  const int32_t* sums32(int t) const { return s32.data() + size_t(t) * size_t(blocks()); }
  const int16_t* sums16(int t) const { return s16.data() + size_t(t) * size_t(2 * blocks()); }
};
void quantize_act(const float* X, int n, int k, ActQ8* out);
void quantize_act_scalar(const float* X, int n, int k, ActQ8* out);  // the reference quantize_act equals bit for bit
bool quantize_act_avx2(const float* X, int n, int k, ActQ8* out);    // the AVX2 quantizer (false: no AVX2 here)

// Y[t, r] for weight rows r in [r0, r1) and every token of x. W: m rows of row_bytes bytes, x.k columns.
using Int8RowsFn = void (*)(Int8Type type, const uint8_t* W, size_t row_bytes, const ActQ8& x, const float* bias,
                            float* Y, int m, int r0, int r1);
void int8_rows_scalar(Int8Type, const uint8_t*, size_t, const ActQ8&, const float*, float*, int, int, int);
void int8_rows_avx2(Int8Type, const uint8_t*, size_t, const ActQ8&, const float*, float*, int, int, int);
void int8_rows_avxvnni(Int8Type, const uint8_t*, size_t, const ActQ8&, const float*, float*, int, int, int);
void int8_rows_avx512vnni(Int8Type, const uint8_t*, size_t, const ActQ8&, const float*, float*, int, int, int);

enum class Int8Isa { Scalar, Avx2, AvxVnni, Avx512Vnni };
bool int8_isa_supported(Int8Isa isa);
Int8RowsFn int8_rows(Int8Isa isa);
// The kernel family linear() uses now: the best this CPU has within set_isa()'s family.
Int8Isa int8_active_isa();
const char* int8_isa_name(Int8Isa isa);

// The 8 scales and 8 mins of a Q4_K/Q5_K super-block (the packing gguf_k_scales.h's k4_scale_min reads one at a
// time), four at a time from the 12 packed bytes read as little-endian words: byte j of sc[0] is the scale of
// sub-block j, of sc[1] that of j + 4; mn likewise. Bytes 0-3 hold scales 0-3 in their low 6 bits and the top 2 bits
// of scales 4-7 in bits 6-7; bytes 4-7 the same for the mins; bytes 8-11 the low 4 bits of scales 4-7 (low nibble)
// and mins 4-7 (high nibble). The kernels' agreement with the scalar reference (which calls k4_scale_min) tests it.
struct K4Words {
  uint32_t sc[2], mn[2];
};
inline K4Words k4_scale_min_words(const uint8_t* q) {
  uint32_t a, b, c;
  __builtin_memcpy(&a, q, 4);
  __builtin_memcpy(&b, q + 4, 4);
  __builtin_memcpy(&c, q + 8, 4);
  const uint32_t low6 = 0x3f3f3f3fu, low4 = 0x0f0f0f0fu, bits45 = 0x30303030u;
  return {{a & low6, (c & low4) | ((a >> 2) & bits45)}, {b & low6, ((c >> 4) & low4) | ((b >> 2) & bits45)}};
}

// Bytes of the weight blocks of one group (16 blocks of 32, or two super-blocks of 256).
constexpr size_t int8_group_bytes(Int8Type t) {
  switch (t) {
    case Int8Type::Q8_0:
    case Int8Type::Q8_0_Lanes: return kQ8Lanes * kQ8_0Bytes;
    case Int8Type::Q4_0:
    case Int8Type::Q4_1:
    case Int8Type::Q5_0:
    case Int8Type::Q5_1: return size_t(kQ8Lanes) * size_t(nibble_block(t).bytes);
    case Int8Type::Q4_0_Lanes:  // two units of 8 blocks, each the size of a Q4_K super-block
    case Int8Type::Q4_K:
    case Int8Type::Q4_K_Lanes: return 2 * 144;
    case Int8Type::Q5_K:
    case Int8Type::Q5_K_Lanes: return 2 * 176;
    case Int8Type::Q6_K:
    case Int8Type::Q6_K_Lanes: return 2 * 210;
    case Int8Type::MXFP4: return kQ8Lanes * kMxfp4Bytes;
  }
  return 0;
}

// How far ahead (bytes) the 1-2 token kernels prefetch the weight stream: `kernel_default` unless
// SPECSCOPE_INT8_AHEAD=N or set_int8_direct_ahead(N) forced N (0: no software prefetch; -1 restores the default).
// A tuning knob for bench/kernel_ab.cpp.
size_t int8_direct_ahead(size_t kernel_default);
void set_int8_direct_ahead(long bytes);
// Whether the CPU's copy of the weights makes Q4_K, Q5_K and Q6_K lanes copies (TensorView::lanes), and
// linear_int8_shared reads them where it has them: yes unless SPECSCOPE_KQUANT_LANES=0 or set_kquant_lanes(0) (1 or
// -1: the default again). A tuning knob for bench/kernel_ab.cpp.
bool kquant_lanes_enabled();
void set_kquant_lanes(long on);

// The fast path of linear_quant: W checked by the caller (2-D, whole blocks).
void linear_int8(Int8Type type, const float* X, int n, const TensorView& W, const float* bias, float* Y);

// Several products of one X on the fast path (a layer's q/k/v or gate/up; the types may differ, as in Q4_K_M files):
// X quantized once and every product's rows in one fork of the team, each row computed exactly as linear_int8
// computes it. Each W checked by the caller (2-D, whole blocks, k columns).
struct Int8Product {
  Int8Type type;
  const TensorView* W;
  const float* bias;  // or null
  float* Y;
  const float* X = nullptr;  // linear_int8_each: this product's own n x k activations
};
void linear_int8_shared(const float* X, int n, int k, std::span<const Int8Product> products);
// Several products each of its own X (n rows as wide as its W), in one fork of the team: each X quantized as
// linear_int8 quantizes it and each product's rows computed as there (a decode step's experts' down products, Qwen2-MoE's
// shared expert's wider one among them).
void linear_int8_each(int n, std::span<const Int8Product> products);

}  // namespace specscope::cpu::detail
