#pragma once
// The visibility rule of llama_kernels.h's `attention`, shared by both of its kernels (attention.cu's single-block
// path and attention_split.cu's split path) so that it is written once on the GPU. (Its CPU copy is in
// attention_ref.cpp.) Internal linkage, like device_common.cuh.
#include <cstdint>

namespace specscope::cuda {
namespace {

// Whether new row i sees new row k (slot base + k) by the mask (nullptr: causal, k <= i), the window aside: the rule
// by which a tree row's ancestors are its own, which the row tiles also rank its tree slots by (attention_rows.cu).
__device__ inline bool tree_slot_seen(int i, int k, int n, const uint8_t* mask) {
  return mask ? mask[int64_t(i) * n + k] != 0 : k <= i;
}

// Whether new row i sees slot j: every earlier slot (j < base), new row j - base when tree_slot_seen says so, and
// with window > 0 only slots whose position is within the window of the row's.
__device__ inline bool slot_visible(int i, int j, int n, int base, const uint8_t* mask, const int32_t* positions,
                                    const int32_t* slot_pos, int window) {
  bool visible = j < base || tree_slot_seen(i, j - base, n, mask);
  if (visible && window > 0 && positions[i] - slot_pos[j] >= window) visible = false;
  return visible;
}

}  // namespace
}  // namespace specscope::cuda
