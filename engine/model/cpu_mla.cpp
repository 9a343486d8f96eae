// DeepSeek-V2/V3's multi-head latent attention (MLA; DeepSeek-V2 paper, arXiv 2405.04434, section 2.1) on the CPU,
// in the form llama.cpp runs it: the cache holds, per token, the normed latent c (kv_lora_rank values) and the rotary
// key k_r (rotary_dim values, one for all heads), and kv_b never expands the cache. Head h's score of a key is
//   q_nope_h . (W_kb_h c) + q_rope_h . k_r = (W_kb_h^T q_nope_h) . c + q_rope_h . k_r,
// so each head's query becomes [W_kb_h^T q_nope_h, q_rope_h] (the "absorbed" query, kv_lora_rank + rotary_dim wide) and
// attention runs as one key head shared by every query head, summing the latents c; the head's value is then
// W_vb_h (sum_j w_j c_j). A 16-head DeepSeek-V2-Lite layer caches 576 + 512 floats a token instead of 16 x (192 + 128).
#include <cstring>
#include <vector>

#include "engine/cpu/matmul.h"
#include "engine/cpu/op_profile.h"
#include "engine/cpu/ops.h"
#include "engine/model/cpu_context.h"
#include "engine/model/model.h"

namespace specscope {
namespace {

// Each head's own product over all the rows: the first `width` values of head h of every row of src (rows src_row
// apart, heads head_stride apart) gathered into in[h][rows][width], times W[h] into out[h][rows][W[h] rows]; every
// head's product in one call (one fork where the weights are block-quantized).
void per_head_products(const float* src, size_t src_row, size_t head_stride, int width, int rows,
                       const std::vector<TensorView>& W, float* in, float* out, std::vector<cpu::LinearInput>& products) {
  products.clear();
  for (size_t h = 0; h < W.size(); ++h) {
    float* dst = in + h * size_t(rows) * size_t(width);
    for (int i = 0; i < rows; ++i)
      std::memcpy(dst + size_t(i) * width, src + size_t(i) * src_row + h * head_stride, sizeof(float) * width);
    products.push_back({dst, &W[h], nullptr, out + h * size_t(rows) * size_t(W[h].rows())});
  }
  cpu::linear_each(rows, products);
}

}  // namespace

void CpuContext::mla_project(int l, int na, const int32_t* pos) {
  const auto& c = model_->config();
  const auto& L = weights().layers[size_t(l)];
  const int H = c.hidden_size, nh = c.num_heads, hd = c.head_dim, nope = c.nope_dim(), R = c.kv_lora_rank;
  const int kd = key_head_dim_;  // R + rotary
  grow_mlp_scratch(na);
  grow(q_, size_t(na) * nh * hd);
  grow(k_, size_t(na) * kd);
  grow(mla_q_, size_t(na) * nh * kd);
  grow(mla_lat_, size_t(na) * nh * R);
  {
    const cpu::ProfileScope profile(cpu::Op::Norm);
    cpu::rmsnorm(x_.data(), L.input_norm.data(), h_.data(), na, H, c.rms_norm_eps);
  }
  // The query (directly, or through its low rank and norm) and the latent with the rotary key, from the same input.
  if (c.q_lora_rank > 0) {
    grow(mla_qa_, size_t(na) * c.q_lora_rank);
    const cpu::LinearOutput a[] = {{&L.wq_a, nullptr, mla_qa_.data()}, {&L.wkv_a, nullptr, k_.data()}};
    cpu::linear_shared_input(h_.data(), na, a);
    {
      const cpu::ProfileScope profile(cpu::Op::Norm);
      cpu::rmsnorm(mla_qa_.data(), L.q_a_norm.data(), mla_qa_.data(), na, c.q_lora_rank, c.rms_norm_eps);
    }
    cpu::linear(mla_qa_.data(), na, L.wq, nullptr, q_.data());
  } else {
    const cpu::LinearOutput a[] = {{&L.wq, nullptr, q_.data()}, {&L.wkv_a, nullptr, k_.data()}};
    cpu::linear_shared_input(h_.data(), na, a);
  }
  {
    const cpu::ProfileScope profile(cpu::Op::Rope);
    cpu::RopeTable& rope = rope_for(l);
    for (int i = 0; i < na; ++i) {
      float* kv = k_.data() + size_t(i) * kd;
      cpu::rmsnorm(kv, L.kv_a_norm.data(), kv, 1, R, c.rms_norm_eps);  // the latent only; the rotary key is not normed
      rope.apply_interleaved(kv + R, 1, size_t(kd), pos[active_[i]]);
      rope.apply_interleaved(q_.data() + size_t(i) * nh * hd + nope, nh, size_t(hd), pos[active_[i]]);
      std::memcpy(k_slot(l, n_past_ + active_[i]), kv, sizeof(float) * kd);
      std::memcpy(v_slot(l, n_past_ + active_[i]), kv, sizeof(float) * R);
    }
    put_kt_rows(l, na);
  }
  // Each head's nope query (the first nope of its hd values) taken to the latent's space by its k_b.
  grow(mla_nope_, size_t(nh) * na * nope);
  grow(mla_qlat_, size_t(nh) * na * R);
  per_head_products(q_.data(), size_t(nh) * hd, size_t(hd), nope, na, L.k_b, mla_nope_.data(), mla_qlat_.data(),
                    mla_products_);
  for (int i = 0; i < na; ++i)
    for (int h = 0; h < nh; ++h) {
      float* q = mla_q_.data() + (size_t(i) * nh + h) * kd;
      std::memcpy(q, mla_qlat_.data() + (size_t(h) * na + i) * R, sizeof(float) * R);
      std::memcpy(q + R, q_.data() + (size_t(i) * nh + h) * hd + nope, sizeof(float) * (kd - R));
    }
}

void CpuContext::mla_values(const LayerWeights& L, int na) {
  const auto& c = model_->config();
  const int nh = c.num_heads, R = c.kv_lora_rank, vd = c.value_dim();
  // Each head's weighted latent taken to its value by its v_b.
  grow(mla_heads_, size_t(nh) * na * R);
  grow(mla_v_, size_t(nh) * na * vd);
  per_head_products(mla_lat_.data(), size_t(nh) * R, size_t(R), R, na, L.v_b, mla_heads_.data(), mla_v_.data(),
                    mla_products_);
  for (int i = 0; i < na; ++i)
    for (int h = 0; h < nh; ++h)
      std::memcpy(att_.data() + (size_t(i) * nh + h) * vd, mla_v_.data() + (size_t(h) * na + i) * vd,
                  sizeof(float) * vd);
}

}  // namespace specscope
