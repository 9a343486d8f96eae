#include "engine/cpu/rope_table.h"

#include <algorithm>
#include <vector>

#include "engine/cpu/ops.h"

namespace specscope::cpu {

namespace {
// Positions beyond this are rotated with angles computed on the spot: a long-context model's table stays bounded
// (here 64K positions x head_dim floats; 16 MiB at head_dim 64).
constexpr int32_t kMaxTabled = 1 << 16;
}  // namespace

RopeTable::RopeTable(std::vector<float> inv_freq, int head_dim, float scale)
    : inv_freq_(std::move(inv_freq)), head_dim_(head_dim), rotary_dim_(2 * int(inv_freq_.size())), scale_(scale) {}

const float* RopeTable::angles(int32_t pos) {
  if (pos >= known_) {
    // Grow geometrically (positions arrive one step at a time) and fill the new positions.
    const int32_t want = std::min(kMaxTabled, std::max(pos + 1, std::max<int32_t>(64, known_ * 2)));
    cos_sin_.resize(size_t(want) * size_t(rotary_dim_));
    for (int32_t p = known_; p < want; ++p)
      rope_angles(p, inv_freq_.data(), rotary_dim_ / 2, cos_sin_.data() + size_t(p) * size_t(rotary_dim_), scale_);
    known_ = want;
  }
  return cos_sin_.data() + size_t(pos) * size_t(rotary_dim_);
}

void RopeTable::apply(float* vec, int n_heads, int32_t pos) {
  if (pos < 0 || pos >= kMaxTabled) {
    rope(vec, n_heads, head_dim_, pos, inv_freq_.data(), rotary_dim_, scale_);
    return;
  }
  rope_rotate(vec, n_heads, head_dim_, angles(pos), rotary_dim_);
}

void RopeTable::apply_interleaved(float* vec, int n_heads, size_t stride, int32_t pos) {
  const int half = rotary_dim_ / 2;
  std::vector<float> own;
  const float* cs = nullptr;
  if (pos < 0 || pos >= kMaxTabled) {
    own.resize(size_t(rotary_dim_));
    rope_angles(pos, inv_freq_.data(), half, own.data(), scale_);
    cs = own.data();
  } else {
    cs = angles(pos);
  }
  for (int h = 0; h < n_heads; ++h) {
    float* x = vec + size_t(h) * stride;
    for (int i = 0; i < half; ++i) {
      const float c = cs[i], s = cs[half + i], a = x[2 * i], b = x[2 * i + 1];
      x[2 * i] = a * c - b * s;
      x[2 * i + 1] = b * c + a * s;
    }
  }
}

}  // namespace specscope::cpu
