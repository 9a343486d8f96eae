#pragma once
// The visibility rule and the score of llama_kernels.h's `attention`, shared by its kernels (attention.cu's
// single-block path, attention_rows.cu's row tiles and attention_split.cu's split path) so that each is written once
// on the GPU. (The CPU copies: the rule in attention_ref.cpp, the score in engine/cpu/attention.cpp.) Internal
// linkage, like device_common.cuh.
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

// The score of a visible slot from its dot product with the query: times `scale`, then with soft_cap > 0 (Gemma 2's
// attn_logit_softcapping) soft_cap * tanh(score / soft_cap), as the CPU backend caps it. Each step is rounded alone
// (__fmul_rn, __fdiv_rn): a product the compiler fused into the exp's subtraction (exp(s - max)) would round
// differently in each kernel, and the paths must give a row the same bits whichever one runs it.
__device__ inline float slot_score(float dot, float scale, float soft_cap) {
  const float s = __fmul_rn(dot, scale);
  return soft_cap > 0.f ? __fmul_rn(soft_cap, tanhf(__fdiv_rn(s, soft_cap))) : s;
}

}  // namespace
}  // namespace specscope::cuda
