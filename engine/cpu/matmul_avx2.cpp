// AVX2 + FMA + F16C kernels for linear(): the widening kernels of matmul_rows.h on the Avx2 mapping
// (simd_map.h: 8-wide vectors, 4 rows x 3 tokens register tiles). Only called after a run-time check (matmul.cpp).
// The standard headers are included above the target pragma so that no inline library code is compiled for
// AVX2 by this file.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "engine/cpu/matmul_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define SPECSCOPE_SIMD_AVX2
#include "engine/cpu/matmul_rows.h"  // after the target pragma: compiled for AVX2 here

namespace specscope::cpu::detail {

void rows_avx2(const LinearArgs& a, int r0, int r1, float* scratch) { rows_for<Avx2>(a, r0, r1, scratch); }

void convert_avx2(DType t, const void* src, float* dst, size_t count) { convert_row<Avx2>(t, src, dst, count); }

}  // namespace specscope::cpu::detail

#pragma GCC pop_options
