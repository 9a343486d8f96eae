#pragma once
// Activation rows quantized for the requantized weight panels (int8_panels.h, int4_panels.h): one scale per token,
// the one quantizer both kernels and their references read, so that all of them see the same codes. Runs once per
// linear call on the calling thread, so at a drafter's sizes (k = 256-768, one token) its speed is a good part of
// the call's: the AVX-512 loop gives the scalar loop's bits (IEEE multiply, then round to nearest even).
#include <cstddef>
#include <cstdint>

namespace specscope::cpu::detail {

// Below this many multiply-adds a panel product runs on its caller alone. The panels are for drafters, whose products
// are small (the shipped draft-small: 32K-196K multiply-adds, its LM head 1M), and a fork costs its join: the
// draft-small forward on int4 panels took 0.034-0.043 ms on one thread against 0.054-0.064 on two with forks from
// 64K on (13 forks, 0.015 ms of it waiting at their joins). One core runs these kernels at ~125 GMAC/s, so a product
// gains from a second thread only where half of it takes longer than a fork and join (~1-2 us here).
constexpr size_t kPanelMinParallelMacs = size_t(1) << 19;

// Whether the panel kernels (int8_panels.h, int4_panels.h) take their AVX-512 VNNI versions: the CPU has AVX-512
// F/BW/VL/DQ and VNNI, and set_isa() / SPECSCOPE_MATMUL_ISA allow AVX-512 (so tests reach the AVX2 versions on such
// CPUs too). Otherwise they take the AVX2 ones (where the CPU has AVX2: panels_avx2_supported).
bool panels_have_avx512_vnni();
bool panels_use_avx512_vnni();
bool panels_avx2_supported();

// Per token t of X [n][k]: s[t] = max|x| / 127, or NaN when the row holds a NaN or infinity (its outputs turn NaN,
// as the exact product's would be non-finite), or 0 when that is below FLT_MIN; codes c = round_even(x * (1 / s[t]))
// clamped to [-127, 127] (0 for the last two cases), stored as the byte c + offset (offset 0: signed codes; 128:
// unsigned, for vpdpbusd's first operand) in q [n][kp], the columns k..kp-1 holding offset (code 0).
void quantize_token_rows(const float* X, int n, int k, int kp, uint8_t offset, uint8_t* q, float* s);
// The reference (plain loops; runs anywhere).
void quantize_token_rows_scalar(const float* X, int n, int k, int kp, uint8_t offset, uint8_t* q, float* s);

}  // namespace specscope::cpu::detail
