// CPU references of kernels/norm_rope.cu (kernel_refs.h): the engine's cpu::rmsnorm, and cpu::rope's two parts
// (cpu::RopeTable's: angles times the scale, then the rotation of the turned dimensions) row by row at each row's
// own position (the kernel takes arbitrary position ids, as tree batches need).
#include <cstddef>
#include <vector>

#include "engine/cpu/ops.h"
#include "kernels/kernel_refs.h"

namespace specscope::cuda::ref {

void rmsnorm(const float* x, const float* w, float* y, int rows, int dim, float eps) {
  cpu::rmsnorm(x, w, y, rows, dim, eps);
}

void rope(float* v, int rows, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq,
          int rotary_dim, float scale) {
  const int turned = rotary_dim > 0 ? rotary_dim : head_dim;
  std::vector<float> cos_sin(static_cast<std::size_t>(turned));
  for (int r = 0; r < rows; ++r) {
    cpu::rope_angles(positions[r], inv_freq, turned / 2, cos_sin.data(), scale);
    cpu::rope_rotate(v + int64_t(r) * n_heads * head_dim, n_heads, head_dim, cos_sin.data(), turned);
  }
}

}  // namespace specscope::cuda::ref
