#pragma once
// The visibility rule of llama_kernels.h's `attention`, shared by both of its kernels (attention.cu's single-block
// path and attention_split.cu's split path) so that it is written once on the GPU. (Its CPU copy is in
// attention_ref.cpp.) Internal linkage, like device_common.cuh.
#include <cstdint>

namespace specscope::cuda {
namespace {

// Whether new row i sees slot j: every earlier slot (j < base), new row j - base when the mask says so (nullptr:
// causal, j - base <= i), and with window > 0 only slots whose position is within the window of the row's.
__device__ inline bool slot_visible(int i, int j, int n, int base, const uint8_t* mask, const int32_t* positions,
                                    const int32_t* slot_pos, int window) {
  bool visible = j < base || (mask ? mask[int64_t(i) * n + (j - base)] != 0 : (j - base) <= i);
  if (visible && window > 0 && positions[i] - slot_pos[j] >= window) visible = false;
  return visible;
}

}  // namespace
}  // namespace specscope::cuda
