#include "engine/cpu/isa_dispatch.h"

namespace specscope::cpu {

int isa_lanes() {
#if SS_PER_ISA
  // The same levels the kernels are compiled for (GCC's names for the psABI's x86-64 levels).
  if (__builtin_cpu_supports("x86-64-v4")) return 16;
  if (__builtin_cpu_supports("x86-64-v3")) return 8;
  return 4;
#else
  return SS_BUILT_LANES;
#endif
}

}  // namespace specscope::cpu
