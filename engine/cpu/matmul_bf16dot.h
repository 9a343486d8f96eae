#pragma once
// Internal to engine/cpu/matmul*.cpp: the AVX512-BF16 kernels of linear() for bf16 weights (matmul_bf16dot.cpp).
#include <cstddef>
#include <cstdint>

namespace specscope::cpu::detail {

// n rows of X [n, k] rounded to bf16 (nearest even) into xb, rows at stride kp (k rounded up to 32, zero-padded).
void to_bf16_rows(const float* X, int n, int k, uint16_t* xb, size_t kp);
// Y[:, r0:r1) = xb W^T (+ bias) for bf16 W [m, k].
void rows_bf16dot(const float* X, const uint16_t* xb, size_t kp, int n, int k, const uint16_t* W, const float* bias,
                  float* Y, int m, int r0, int r1);

struct Bf16Panels;
// Y[:, 16 p0 : 16 p1) = xb W^T (+ bias) from W's panels (bf16_panels.h); Y [n, w.m].
void panels_bf16dot(const uint16_t* xb, size_t kp, int n, const Bf16Panels& w, const float* bias, float* Y, int p0,
                    int p1);

}  // namespace specscope::cpu::detail
