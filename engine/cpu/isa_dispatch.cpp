#include "engine/cpu/isa_dispatch.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace specscope::cpu {
namespace {

int widest_supported() {
#if SS_PER_ISA
  // The same levels the kernels are compiled for (GCC's names for the psABI's x86-64 levels).
  if (__builtin_cpu_supports("x86-64-v4")) return 16;
  if (__builtin_cpu_supports("x86-64-v3")) return 8;
  return 4;
#else
  return SS_BUILT_LANES;
#endif
}

int default_lanes() {
  const int allowed = isa_lanes_allowed_by_env(), widest = widest_supported();
  return allowed < widest ? allowed : widest;
}

// 0 until first asked; read on every kernel call (a relaxed load), so set_isa_lanes takes effect at once.
std::atomic<int> g_lanes{0};

}  // namespace

int isa_lanes_allowed_by_env() {
  const char* e = std::getenv("SPECSCOPE_MATMUL_ISA");
  if (e && !std::strcmp(e, "scalar")) return 4;
  if (e && !std::strcmp(e, "avx2")) return 8;
  return 16;
}

bool isa_lanes_supported(int lanes) {
#if SS_PER_ISA
  return (lanes == 16 || lanes == 8 || lanes == 4) && lanes <= widest_supported();
#else
  return lanes == SS_BUILT_LANES;
#endif
}

int isa_lanes() {
  int lanes = g_lanes.load(std::memory_order_relaxed);
  if (lanes == 0) {
    lanes = default_lanes();
    g_lanes.store(lanes, std::memory_order_relaxed);
  }
  return lanes;
}

int set_isa_lanes(int lanes) {
  const int before = isa_lanes();
  g_lanes.store(isa_lanes_supported(lanes) ? lanes : default_lanes(), std::memory_order_relaxed);
  return before;
}

}  // namespace specscope::cpu
