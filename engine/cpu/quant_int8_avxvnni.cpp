// The AVX-VNNI integer dot kernels (quant_int8_ymm.h): vpdpbusd on ymm (VEX-encoded, Alder Lake and later Intel
// cores without AVX-512). Only called after a run-time AVX-VNNI + AVX2 + FMA + F16C check (quant_int8_linear.cpp).
// The same source as the AVX2 kernels apart from the dot, whose logic the AVX2 build tests; the VNNI instruction
// itself is only exercised on a CPU that has it.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/cpu/quant_int8.h"  // (and the standard headers) before the target pragma: only kernels get it

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")

#include "engine/cpu/quant_int8_ymm.h"

namespace specscope::cpu::detail {
namespace {

struct AvxVnniOps {
  static constexpr bool kSignTrick = false;  // vpdpbusd does not saturate: Q8_0 goes as codes + 128
  static constexpr bool kInt16Pairs = false;  // products summed straight into int32 lanes
  static __attribute__((always_inline)) inline __m256i dot_add(__m256i sum, __m256i u8, __m256i s8) {
    return _mm256_dpbusd_avx_epi32(sum, u8, s8);
  }
};

}  // namespace

void int8_rows_avxvnni(Int8Type type, const uint8_t* W, size_t row_bytes, const ActQ8& x, const float* bias,
                       float* Y, int m, int r0, int r1) {
  rows_ymm_dispatch<AvxVnniOps>(type, W, row_bytes, x, bias, Y, m, r0, r1);
}

}  // namespace specscope::cpu::detail

#pragma GCC pop_options
