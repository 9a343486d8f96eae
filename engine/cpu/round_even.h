#pragma once
// Round to nearest, ties to even (the default rounding mode), without a libm call per element: cvtss2si is in
// baseline x86-64, where std::nearbyint is a function call. What every activation quantizer's scalar loop rounds
// with (quant_int8_act.cpp, panel_act.cpp), and what their AVX-512 loops' cvtps2dq gives bit for bit.
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace specscope::cpu::detail {

inline int round_even(float v) {
#if defined(__x86_64__)
  return _mm_cvtss_si32(_mm_set_ss(v));
#else
  return int(std::nearbyint(v));
#endif
}

}  // namespace specscope::cpu::detail
