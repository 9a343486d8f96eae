#pragma once
// The ggml tensor types that GGUF files store, and the block formats SpecScope computes with.
//
// Every ggml type id has a block size (elements per block) and a type size (bytes per block); a row of n
// elements (n a multiple of the block size) takes n / block_size * type_size bytes. The types we compute with:
//   F32, F16, BF16     one element per "block"
//   Q8_0  32 elements: f16 scale d, 32 x int8 q                        x = q * d
//   Q4_0  32 elements: f16 scale d, 16 bytes of nibbles                x = (q - 8) * d
//         (element j < 16 in the low nibble of byte j, element j + 16 in its high nibble)
//   Q4_1  32 elements: f16 d, f16 min m, 16 bytes of nibbles as Q4_0    x = q * d + m
//   Q5_0  32 elements: f16 d, 4 bytes qh, 16 bytes of nibbles as Q4_0   x = (q - 16) * d
//         (q = nibble | bit j of qh << 4; qh is a little-endian uint32 whose bit j belongs to element j)
//   Q5_1  32 elements: f16 d, f16 min m, 4 bytes qh, 16 bytes nibbles   x = q * d + m   (q as Q5_0)
//   Q4_K  256 elements: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32,
//         128 bytes of nibbles                                          x = d*sc * q - dmin*m
//   Q5_K  as Q4_K plus 32 bytes of high bits (bit s of byte l is element l of sub-block s)
//   Q6_K  256 elements: 128 bytes low nibbles, 64 bytes of 2-bit highs, 16 int8 scales (one per 16),
//         f16 d                                                          x = d*sc * (q - 32)
// Dequantization follows ggml's reference (dequantize_row_*) operation for operation in f32, so it is
// bit-exact with ggml and with the gguf Python package. It is also exact by construction: an f16 scale has an
// 11-bit significand, the sub-block scales and mins 6 (K) or 7 (Q6_K) bits, the quants at most 6, so every
// product (d*sc, dmin*m, d*sc*q, d*q) fits in f32's 24 bits and is exact; the one rounding is Q4_K/Q5_K's final
// subtraction (or Q4_1/Q5_1's final + m), correctly rounded by IEEE-754 whichever way it is computed (even fused
// into an FMA). Quantization is not so lucky (Q4_0's x*id + 8.5 and Q4_1's (x - min)*id + 0.5 round twice in
// ggml's reference), so this file is compiled with -ffp-contract=off: no compiler may fuse them into one FMA.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace specscope {

enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41,
};

struct GgmlTypeInfo {
  GgmlType type;
  const char* name;   // as ggml spells it: "Q4_K", "BF16"
  int64_t block_size; // elements per block
  size_t type_size;   // bytes per block
  bool computable;    // dequantize_row / vec_dot support it
};

// nullptr for ids that name no ggml type (including the removed ones: 4, 5, 31-33, 36-38).
const GgmlTypeInfo* ggml_type_info(uint32_t id);
const GgmlTypeInfo& ggml_type_info(GgmlType t);  // t must be a known type
std::string_view ggml_type_name(GgmlType t);
int64_t ggml_block_size(GgmlType t);
size_t ggml_type_size(GgmlType t);
// Bytes of n elements; n must be a multiple of the block size (std::invalid_argument otherwise).
size_t ggml_row_size(GgmlType t, int64_t n);

// F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4.
bool ggml_can_dequantize(GgmlType t);
// F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (the K-quants are read, not written, for now).
bool ggml_can_quantize(GgmlType t);

// The functions below take n elements (a multiple of the type's block size) and throw std::invalid_argument
// when n is not, or when the type is not supported: the callers (the GGUF reader, the model) validate files
// first, so such a call is a bug, not bad input.

// src holds ggml_row_size(t, n) bytes; dst receives n floats.
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);
// Writes ggml_row_size(t, n) bytes. The block types use ggml's reference quantizers, per block of 32:
//   Q8_0: d = amax / 127, q = roundf(x * (1/d))
//   Q4_0: d = max / -8 (max: the first element of largest magnitude, with its sign), q = min(15, trunc(x/d + 8.5))
//   Q5_0: d = max / -16, q = min(31, trunc(x/d + 16.5))
//   Q4_1: d = (max - min) / 15, m = min, q = min(15, trunc((x - min)/d + 0.5))
//   Q5_1: d = (max - min) / 31, m = min, q = min(31, trunc((x - min)/d + 0.5))
// (x/d is x * (1/d), and 1/d is taken as 0 when d is 0); d and m are stored rounded to f16, the codes use the
// unrounded f32 values. F16 and BF16 round to nearest even. Non-finite inputs give unspecified (but defined)
// codes.
void quantize_row(GgmlType t, const float* src, void* dst, int64_t n);

// sum_i w_i * x_i where w = dequantize_row(t, row, n), computed block by block through a 256-float buffer
// (no matrix is ever expanded). Each w_i is the exact dequantized value; products are summed in f32 in
// chunks of 32 elements and the chunk sums in f64, so |result - exact| <= 34 * 2^-24 * sum_i |w_i * x_i|.
float vec_dot(GgmlType t, const void* row, const float* x, int64_t n);

// Which summation kernel vec_dot uses. Auto picks AVX2+FMA when the CPU has it.
enum class VecDotKernel { Auto, Scalar, Avx2 };
bool vec_dot_avx2_available();
// vec_dot with a chosen kernel (tests compare them); Avx2 falls back to Scalar where unavailable.
float vec_dot_with(VecDotKernel k, GgmlType t, const void* row, const float* x, int64_t n);

}  // namespace specscope
