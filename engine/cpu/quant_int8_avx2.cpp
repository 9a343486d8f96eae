// The AVX2 integer dot kernels (quant_int8_ymm.h): 4-product sums by vpmaddubsw (unsigned x signed bytes to int16
// pairs) and vpmaddwd with ones. Only called after a run-time AVX2 + FMA + F16C check (quant_int8_linear.cpp).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/cpu/quant_int8.h"  // (and the standard headers) before the target pragma: only kernels get it

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

#include "engine/cpu/quant_int8_ymm.h"

namespace specscope::cpu::detail {
namespace {

struct Avx2Ops {
  static constexpr bool kSignTrick = true;  // Q8_0: 128-offset codes could saturate vpmaddubsw's int16 pairs
  // Products through int16 pair sums (vpmaddubsw), which quant_int8_ymm.h adds in int16 as far as they cannot overflow
  // before one vpmaddwd widens them: per 32 products 1 + 1/8 multiplies (Q4 codes) rather than 2.
  static constexpr bool kInt16Pairs = true;
  static __attribute__((always_inline)) inline __m256i pairs(__m256i u8, __m256i s8) {
    return _mm256_maddubs_epi16(u8, s8);
  }
};

}  // namespace

void int8_rows_avx2(Int8Type type, const uint8_t* W, size_t row_bytes, const ActQ8& x, const float* bias, float* Y,
                    int m, int r0, int r1) {
  rows_ymm_dispatch<Avx2Ops>(type, W, row_bytes, x, bias, Y, m, r0, r1);
}

}  // namespace specscope::cpu::detail

#pragma GCC pop_options
