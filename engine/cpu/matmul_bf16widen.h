#pragma once
// Internal to engine/cpu/matmul*.cpp: bf16 weights on AVX2 CPUs (no AVX512-BF16) from their panels
// (bf16_panels.h), widened to f32 in registers and multiplied by f32 activations (matmul_bf16widen_avx2.cpp).
#include <cstddef>

namespace specscope::cpu::detail {

struct Bf16Panels;
// Y[:, 16 p0 : 16 p1) = X W^T (+ bias) from W's panels; X [n, w.k] f32, Y [n, w.m]. Each output is one f32 FMA chain
// over k in order (exact bf16 weights, f32 activations), whatever n is or the tile its token falls in.
void panels_bf16widen_avx2(const float* X, int n, const Bf16Panels& w, const float* bias, float* Y, int p0, int p1);

}  // namespace specscope::cpu::detail
