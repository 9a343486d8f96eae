#pragma once
// The cosines and sines of RoPE for each position a sequence has used, computed once per position (with
// cpu::rope_angles, so the values are exactly those cpu::rope computes) instead of once per row, layer, and q and k:
// an 8-token step of the default base evaluated 4,096 cos/sin pairs, about as long as its norms.
#include <cstdint>
#include <vector>

namespace specscope::cpu {

class RopeTable {
 public:
  RopeTable() = default;
  // Each head's first 2 * inv_freq.size() dimensions rotate (all of head_dim but for Phi's partial rotary), by
  // cosines and sines times `scale` (LongRoPE's attention factor; 1 elsewhere).
  RopeTable(std::vector<float> inv_freq, int head_dim, float scale = 1.f);

  // Rotates every head of one token (as cpu::rope with this table's inv_freq). pos >= 0.
  void apply(float* vec, int n_heads, int32_t pos);
  // DeepSeek's interleaved RoPE (llama.cpp's "normal" mode): for each of n_heads heads at vec + h * stride, rotates
  // the pairs (2i, 2i + 1) of its first rotary dimensions by frequency i, with the same angles as apply().
  void apply_interleaved(float* vec, int n_heads, size_t stride, int32_t pos);

 private:
  const float* angles(int32_t pos);  // cos then sin of pos, computed on first use

  std::vector<float> inv_freq_;
  int head_dim_ = 0;
  int rotary_dim_ = 0;  // 2 * inv_freq_.size()
  float scale_ = 1.f;
  std::vector<float> cos_sin_;  // [positions][rotary_dim]: rotary_dim / 2 cosines, then as many sines
  int32_t known_ = 0;           // positions [0, known_) are in cos_sin_
};

}  // namespace specscope::cpu
