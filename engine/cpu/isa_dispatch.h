#pragma once
// Kernels compiled once per instruction set at that set's vector width, and the one run-time choice among them.
// Internal to engine/cpu.
//
// Why not target_clones: a clone compiles the same source for each target, so a kernel written in 16-float vectors
// (vec_math.h) is one zmm a vector on AVX-512 but two ymm on AVX2, where GCC spills arrays of them and turns their
// comparisons into one scalar compare per lane. Here a kernel is a template on its width L, and
// SS_PER_ISA_KERNEL(name, ...) defines name() to run name_with<16> compiled for x86-64-v4, name_with<8> for
// x86-64-v3, or name_with<4> for baseline x86-64, as the CPU allows. A kernel whose sums must not depend on L keeps
// them in 16 lanes (vec::sum_exp, vec::hsum_parts): then 16 and 8 (both with FMA) give the same bits, and 4 (no FMA:
// GCC rounds each product before adding it) stays within f32 rounding of them.
#if defined(__x86_64__) && !defined(__clang__) && !defined(SPECSCOPE_NO_TARGET_CLONES)
#define SS_PER_ISA 1
#define SS_TARGET_AVX512 __attribute__((target("arch=x86-64-v4")))
#define SS_TARGET_AVX2 __attribute__((target("arch=x86-64-v3")))
#else
#define SS_PER_ISA 0
#endif

namespace specscope::cpu {

// The vector width, in floats, of the kernels this CPU runs: 16 (AVX-512), 8 (AVX2 + FMA) or 4; at most
// isa_lanes_allowed_by_env()'s.
int isa_lanes();
// The widest kernels SPECSCOPE_MATMUL_ISA allows: 4 for "scalar", 8 for "avx2", else 16. The one switch that runs
// every kernel family of a narrower CPU on this one (matmul.cpp's widening and integer kernels read it here too).
int isa_lanes_allowed_by_env();
// Runs the kernels at `lanes` floats a vector (16, 8 or 4; at most what the CPU supports; 0: isa_lanes()'s default
// again), for tests and A/B runs; returns the width in force before. Only between forwards.
int set_isa_lanes(int lanes);
// Whether this CPU can run the kernels at `lanes` floats a vector.
bool isa_lanes_supported(int lanes);

}  // namespace specscope::cpu

// Defines `ret name params` (params and args in parentheses) to call name_with<L> args at this CPU's width.
#if SS_PER_ISA
#define SS_PER_ISA_KERNEL(ret, name, params, args)                                            \
  static SS_TARGET_AVX512 ret name##_avx512 params { return name##_with<16> args; }          \
  static SS_TARGET_AVX2 ret name##_avx2 params { return name##_with<8> args; }               \
  static ret name##_sse params { return name##_with<4> args; }                               \
  ret name params {                                                                           \
    const int lanes = ::specscope::cpu::isa_lanes();                                          \
    return lanes == 16 ? name##_avx512 args : lanes == 8 ? name##_avx2 args : name##_sse args; \
  }
#else
// One version, at the width this file is compiled for.
#if defined(__AVX512F__)
#define SS_BUILT_LANES 16
#elif defined(__AVX2__)
#define SS_BUILT_LANES 8
#else
#define SS_BUILT_LANES 4
#endif
#define SS_PER_ISA_KERNEL(ret, name, params, args) \
  ret name params { return name##_with<SS_BUILT_LANES> args; }
#endif
