#pragma once
// The CUDA backend's on/off settings from the environment (SPECSCOPE_CUDA_FUSE, _GRAPHS, _QKV_ONE_PRODUCT, ...),
// read one way wherever they are read: the context's and the device model's.
#include <cstdlib>
#include <cstring>

namespace specscope::cuda {

// Unset or empty: `fallback`; "0", "off" or "false": off; anything else: on.
inline bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return !(std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0 || std::strcmp(v, "false") == 0);
}

}  // namespace specscope::cuda
