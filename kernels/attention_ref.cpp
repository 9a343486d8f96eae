// CPU reference of kernels/attention.cu's launcher (kernel_refs.h), whichever of its two paths it takes (the
// single-block one or attention_split.cu's; attention_paths.h): the launcher's visibility rule (earlier slots, the mask
// or causality among the new rows, the sliding window) written out as the [rows][keys] table the engine's
// cpu::attention takes, and the keys copied into its transposed tiles; cpu::attention does the rest (GQA, the
// scaled and soft-capped softmax, zeros for a row that sees nothing).
#include <cmath>
#include <vector>

#include "engine/cpu/attention.h"
#include "kernels/kernel_refs.h"

namespace specscope::cuda::ref {

void attention(const float* q, const float* k_cache, const float* v_cache, const int32_t* slot_pos,
               const uint8_t* mask, const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window,
               float soft_cap, float* out) {
  const int total = base + n, kv_dim = nkv * hd;
  std::vector<uint8_t> visible(size_t(n) * size_t(total));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < total; ++j) {
      bool v = j < base || (mask ? mask[size_t(i) * n + size_t(j - base)] != 0 : j - base <= i);
      if (v && window > 0 && positions[i] - slot_pos[j] >= window) v = false;
      visible[size_t(i) * total + j] = v ? 1 : 0;
    }
  const size_t kt_stride = cpu::kt_stride_for(total);
  std::vector<float> kt(size_t(kv_dim) * kt_stride, 0.f);
  for (int j = 0; j < total; ++j)
    for (int e = 0; e < kv_dim; ++e)
      kt[cpu::kt_index(e / hd, e % hd, j, hd, kt_stride)] = k_cache[size_t(j) * kv_dim + e];
  cpu::AttentionArgs a;
  a.q = q;
  a.q_stride = size_t(nh) * hd;
  a.rows = n;
  a.heads = nh;
  a.kv_heads = nkv;
  a.head_dim = hd;
  a.kt = kt.data();
  a.kt_stride = kt_stride;
  a.v = v_cache;
  a.v_stride = size_t(kv_dim);
  a.keys = total;
  a.visible = visible.data();
  a.scale = 1.0f / std::sqrt(float(hd));
  a.soft_cap = soft_cap;
  a.out = out;
  a.out_stride = size_t(nh) * hd;
  cpu::attention(a);
}

}  // namespace specscope::cuda::ref
