// CPU references of kernels/norm_rope.cu (kernel_refs.h): the engine's cpu::rmsnorm, and cpu::rope (its rotary part
// and cosine factor included) row by row at each row's own position (the kernel takes arbitrary position ids, as
// tree batches need).
#include "engine/cpu/ops.h"
#include "kernels/kernel_refs.h"

namespace specscope::cuda::ref {

void rmsnorm(const float* x, const float* w, float* y, int rows, int dim, float eps) {
  cpu::rmsnorm(x, w, y, rows, dim, eps);
}

void rope(float* v, int rows, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq,
          int rotary_dim, float scale) {
  for (int r = 0; r < rows; ++r)
    cpu::rope(v + int64_t(r) * n_heads * head_dim, n_heads, head_dim, positions[r], inv_freq, rotary_dim, scale);
}

}  // namespace specscope::cuda::ref
