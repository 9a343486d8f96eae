#include "engine/heads/head_layer.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "engine/cpu/matmul.h"
#include "engine/cpu/ops.h"
#include "engine/model/weights.h"

namespace specscope {

void HeadCache::reset(int capacity, int kv_dim) {
  capacity_ = capacity;
  kv_dim_ = kv_dim;
  k_.assign(size_t(capacity) * kv_dim, 0.f);
  v_.assign(size_t(capacity) * kv_dim, 0.f);
  committed_ = size_ = 0;
}

void head_layer_forward(const HeadLayerWeights& w, const ModelConfig& c, const std::vector<float>& inv_freq,
                        const float* attn_in, float* hidden, int n, const int32_t* pos, HeadCache& cache,
                        const std::vector<std::vector<int>>* tree_visible) {
  const int H = c.hidden_size, hd = c.head_dim, nh = c.num_heads, nkv = c.num_kv_heads;
  const int qd = nh * hd, kvd = nkv * hd, F = c.intermediate_size;
  if (cache.size_ + n > cache.capacity_) throw std::length_error("draft head cache is full");
  std::vector<float> q(size_t(n) * qd), k(size_t(n) * kvd), v(size_t(n) * kvd), att(size_t(n) * qd, 0.f);
  // One fork of the thread team for q, k and v (and below for gate and up): each output is bit-identical to its own
  // linear() call, and a drafting step makes one such call per tree level.
  const cpu::LinearOutput qkv[] = {{&w.wq, bias_or_null(w.bq), q.data()},
                                   {&w.wk, bias_or_null(w.bk), k.data()},
                                   {&w.wv, bias_or_null(w.bv), v.data()}};
  cpu::linear_shared_input(attn_in, n, qkv);
  const int base = cache.size_;
  for (int i = 0; i < n; ++i) {
    cpu::rope(q.data() + size_t(i) * qd, nh, hd, pos[i], inv_freq.data());
    cpu::rope(k.data() + size_t(i) * kvd, nkv, hd, pos[i], inv_freq.data());
    std::memcpy(cache.k_.data() + size_t(base + i) * kvd, k.data() + size_t(i) * kvd, sizeof(float) * kvd);
    std::memcpy(cache.v_.data() + size_t(base + i) * kvd, v.data() + size_t(i) * kvd, sizeof(float) * kvd);
  }
  const float scale = 1.f / std::sqrt(float(hd));
  const int group = nh / nkv;
  std::vector<int> visible;
  std::vector<float> sc;
  for (int i = 0; i < n; ++i) {
    visible.clear();
    const int committed_visible = tree_visible ? cache.committed_ : base + i + 1;
    for (int j = 0; j < committed_visible; ++j) visible.push_back(j);
    if (tree_visible) {
      for (int s : (*tree_visible)[i]) visible.push_back(s);
      visible.push_back(base + i);
    }
    sc.resize(visible.size());
    for (int h = 0; h < nh; ++h) {
      const float* qh = q.data() + size_t(i) * qd + size_t(h) * hd;
      const int kvh = h / group;
      for (size_t t = 0; t < visible.size(); ++t)
        sc[t] = cpu::dot(qh, cache.k_.data() + size_t(visible[t]) * kvd + size_t(kvh) * hd, hd) * scale;
      cpu::softmax(sc.data(), int(sc.size()));
      float* o = att.data() + size_t(i) * qd + size_t(h) * hd;
      for (size_t t = 0; t < visible.size(); ++t)
        cpu::axpy(sc[t], cache.v_.data() + size_t(visible[t]) * kvd + size_t(kvh) * hd, o, hd);
    }
  }
  cache.size_ += n;
  if (!tree_visible) cache.committed_ = cache.size_;

  std::vector<float> tmp(size_t(n) * H), gate(size_t(n) * F), up(size_t(n) * F);
  cpu::linear(att.data(), n, w.wo, bias_or_null(w.bo), tmp.data());
  cpu::add(tmp.data(), hidden, int64_t(n) * H);
  cpu::rmsnorm(hidden, w.post_attn_norm.data(), tmp.data(), n, H, c.rms_norm_eps);
  const cpu::LinearOutput gate_up[] = {{&w.w_gate, nullptr, gate.data()}, {&w.w_up, nullptr, up.data()}};
  cpu::linear_shared_input(tmp.data(), n, gate_up);
  cpu::silu_mul(gate.data(), up.data(), gate.data(), int64_t(n) * F);
  cpu::linear(gate.data(), n, w.w_down, nullptr, tmp.data());
  cpu::add(tmp.data(), hidden, int64_t(n) * H);
}

}  // namespace specscope
