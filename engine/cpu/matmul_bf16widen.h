#pragma once
// Internal to engine/cpu/matmul*.cpp: bf16 weights on CPUs without AVX512-BF16 from their panels (bf16_panels.h),
// widened to f32 in registers and multiplied by f32 activations (bf16_widen_panels.h, compiled in matmul_avx2.cpp and
// matmul_avx512.cpp).
#include <cstddef>

namespace specscope::cpu::detail {

struct Bf16Panels;
// Y[:, 16 p0 : 16 p1) = X W^T (+ bias) from W's panels; X [n, w.k] f32, Y [n, w.m]. Each output is its even k's f32
// FMA chain plus its odd k's, then the bias: the same bits whatever n, the tile its token falls in, or which of the two.
void panels_bf16widen_avx2(const float* X, int n, const Bf16Panels& w, const float* bias, float* Y, int p0, int p1);
void panels_bf16widen_avx512(const float* X, int n, const Bf16Panels& w, const float* bias, float* Y, int p0, int p1);

}  // namespace specscope::cpu::detail
