#include "engine/model/cpu_context.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/cpu/matmul.h"
#include "engine/cpu/ops.h"
#include "engine/model/model.h"
#include "engine/util/error.h"

namespace specscope {

CpuContext::CpuContext(std::shared_ptr<const Model> model, int n_ctx) : model_(std::move(model)) {
  const auto& c = model_->config();
  n_ctx_ = n_ctx > 0 ? n_ctx : std::min(c.max_position_embeddings, 4096);
  kv_dim_ = c.num_kv_heads * c.head_dim;
  k_cache_.assign(c.num_layers, std::vector<float>(size_t(n_ctx_) * kv_dim_));
  v_cache_.assign(c.num_layers, std::vector<float>(size_t(n_ctx_) * kv_dim_));
  slot_pos_.assign(n_ctx_, 0);
  inv_freq_ = rope_inv_freq(c);
}

// One query head against `total` cached keys/values (row stride `stride`). `sc` holds 0 for visible keys and
// -inf for masked ones on entry. Compiled for AVX-512, AVX2 and baseline, picked at load time; the simd
// reductions let the compiler vectorize the dot products.
#if defined(__x86_64__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2,fma", "default")))
#endif
static void attend_one(const float* q, const float* k, const float* v, int stride, int total, int hd, float scale,
                       float* sc, float* out) {
  for (int j = 0; j < total; ++j) {
    if (sc[j] != 0.f) continue;
    const float* kj = k + size_t(j) * stride;
    float acc = 0.f;
#pragma omp simd reduction(+ : acc)
    for (int d = 0; d < hd; ++d) acc += q[d] * kj[d];
    sc[j] = acc * scale;
  }
  cpu::softmax(sc, total);
  for (int d = 0; d < hd; ++d) out[d] = 0.f;
  for (int j = 0; j < total; ++j) {
    const float w = sc[j];
    if (w == 0.f) continue;
    const float* vj = v + size_t(j) * stride;
#pragma omp simd
    for (int d = 0; d < hd; ++d) out[d] += w * vj[d];
  }
}

static void grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

void CpuContext::forward(const Batch& b, ForwardOutput& out) {
  const auto& c = model_->config();
  const auto& w = model_->weights();
  const int n = b.size();
  if (n == 0) throw InputError("batch", "empty batch");
  if (n_past_ + n > n_ctx_)
    throw InputError("context", "the sequence (" + std::to_string(n_past_ + n) + " tokens) exceeds the context of " +
                                    std::to_string(n_ctx_) + " tokens");
  std::vector<int32_t> pos_storage;
  const int32_t* pos = b.positions.data();
  if (b.positions.empty()) {
    pos_storage.resize(n);
    for (int i = 0; i < n; ++i) pos_storage[i] = n_past_ + i;
    pos = pos_storage.data();
  } else if (int(b.positions.size()) != n) {
    throw InputError("batch", "positions and tokens differ in length");
  }
  if (!b.mask.empty() && b.mask.size() != size_t(n) * n) throw InputError("batch", "mask is not n x n");
  for (int i = 0; i < n; ++i) {
    if (b.tokens[i] < 0 || b.tokens[i] >= c.vocab_size)
      throw InputError("batch", "token id " + std::to_string(b.tokens[i]) + " outside the vocabulary");
    if (pos[i] < 0 || pos[i] >= c.max_position_embeddings * 64)  // long-context models may exceed the config
      throw InputError("batch", "position out of range");
  }

  const int H = c.hidden_size, hd = c.head_dim;
  const int q_dim = c.num_heads * hd, F = c.intermediate_size;
  grow(x_, size_t(n) * H);
  grow(h_, size_t(n) * H);
  grow(q_, size_t(n) * q_dim);
  grow(k_, size_t(n) * kv_dim_);
  grow(v_, size_t(n) * kv_dim_);
  grow(att_, size_t(n) * q_dim);
  grow(ffn_gate_, size_t(n) * F);
  grow(ffn_up_, size_t(n) * F);

  for (int i = 0; i < n; ++i) cpu::embedding_row(w.embed, b.tokens[i], x_.data() + size_t(i) * H);

  out.vocab = c.vocab_size;
  out.hidden = H;
  out.hiddens.assign(b.taps.size(), {});
  auto capture = [&](HiddenTap::Kind kind, int layer, const float* src) {
    for (size_t t = 0; t < b.taps.size(); ++t)
      if (b.taps[t].kind == kind && (kind == HiddenTap::FinalNorm || b.taps[t].layer == layer))
        out.hiddens[t].assign(src, src + size_t(n) * H);
  };

  const int base = n_past_;
  for (int i = 0; i < n; ++i) slot_pos_[base + i] = pos[i];
  for (int l = 0; l < c.num_layers; ++l) {
    const auto& L = w.layers[l];
    capture(HiddenTap::LayerInput, l, x_.data());
    cpu::rmsnorm(x_.data(), L.input_norm.data(), h_.data(), n, H, c.rms_norm_eps);
    cpu::linear(h_.data(), n, L.wq, bias_or_null(L.bq), q_.data());
    cpu::linear(h_.data(), n, L.wk, bias_or_null(L.bk), k_.data());
    cpu::linear(h_.data(), n, L.wv, bias_or_null(L.bv), v_.data());
    for (int i = 0; i < n; ++i) {
      cpu::rope(q_.data() + size_t(i) * q_dim, c.num_heads, hd, pos[i], inv_freq_.data());
      cpu::rope(k_.data() + size_t(i) * kv_dim_, c.num_kv_heads, hd, pos[i], inv_freq_.data());
      std::memcpy(k_slot(l, base + i), k_.data() + size_t(i) * kv_dim_, sizeof(float) * kv_dim_);
      std::memcpy(v_slot(l, base + i), v_.data() + size_t(i) * kv_dim_, sizeof(float) * kv_dim_);
    }
    attention(l, n, pos, b.mask.empty() ? nullptr : b.mask.data());
    cpu::linear(att_.data(), n, L.wo, bias_or_null(L.bo), h_.data());
    cpu::add(h_.data(), x_.data(), int64_t(n) * H);

    cpu::rmsnorm(x_.data(), L.post_attn_norm.data(), h_.data(), n, H, c.rms_norm_eps);
    cpu::linear(h_.data(), n, L.w_gate, bias_or_null(L.b_gate), ffn_gate_.data());
    cpu::linear(h_.data(), n, L.w_up, bias_or_null(L.b_up), ffn_up_.data());
    cpu::silu_mul(ffn_gate_.data(), ffn_up_.data(), ffn_gate_.data(), int64_t(n) * F);
    cpu::linear(ffn_gate_.data(), n, L.w_down, bias_or_null(L.b_down), h_.data());
    cpu::add(h_.data(), x_.data(), int64_t(n) * H);
  }
  cpu::rmsnorm(x_.data(), w.final_norm.data(), h_.data(), n, H, c.rms_norm_eps);
  capture(HiddenTap::FinalNorm, 0, h_.data());

  // Logits only for the rows asked for: verification needs all, vanilla decode only the last.
  out.logit_rows = b.logit_rows;
  if (out.logit_rows.empty()) {
    out.logit_rows.resize(n);
    for (int i = 0; i < n; ++i) out.logit_rows[i] = i;
  }
  const int nr = int(out.logit_rows.size());
  std::vector<float> sel;
  const float* src = h_.data();
  bool contiguous = true;
  for (int r = 0; r < nr; ++r) contiguous &= out.logit_rows[r] == r;
  if (!contiguous || nr != n) {
    sel.resize(size_t(nr) * H);
    for (int r = 0; r < nr; ++r) {
      int row = out.logit_rows[r];
      if (row < 0 || row >= n) throw InputError("batch", "logit row out of range");
      std::memcpy(sel.data() + size_t(r) * H, h_.data() + size_t(row) * H, sizeof(float) * H);
    }
    src = sel.data();
  }
  out.logits.resize(size_t(nr) * c.vocab_size);
  cpu::linear(src, nr, w.lm_head, nullptr, out.logits.data());

  n_past_ += n;
  last_batch_start_ = base;
  last_batch_size_ = n;
  forwards += 1;
  forward_tokens += uint64_t(n);
}

void CpuContext::attention(int layer, int n, const int32_t* pos, const uint8_t* mask) {
  const auto& c = model_->config();
  const int hd = c.head_dim, nh = c.num_heads, group = c.num_heads / c.num_kv_heads;
  const int q_dim = nh * hd, base = n_past_;
  const float scale = 1.0f / std::sqrt(float(hd));
  const int window = c.sliding_window.value_or(0);
  const int total = base + n;
  const int nthreads = omp_get_max_threads();
  grow(scores_, size_t(nthreads) * total);
  const float* kc = k_cache_[layer].data();
  const float* vc = v_cache_[layer].data();

#pragma omp parallel for schedule(static) if (int64_t(n) * nh * total * hd > 262144)  // small work: a fork costs more
  for (int task = 0; task < n * nh; ++task) {
    const int i = task / nh, h = task % nh, kvh = h / group;
    float* sc = scores_.data() + size_t(omp_get_thread_num()) * total;
    for (int j = 0; j < total; ++j) {
      bool visible = j < base || (mask ? mask[size_t(i) * n + (j - base)] != 0 : (j - base) <= i);
      if (visible && window > 0 && pos[i] - slot_pos_[j] >= window) visible = false;
      sc[j] = visible ? 0.f : -std::numeric_limits<float>::infinity();
    }
    attend_one(q_.data() + size_t(i) * q_dim + size_t(h) * hd, kc + size_t(kvh) * hd, vc + size_t(kvh) * hd,
               kv_dim_, total, hd, scale, sc, att_.data() + size_t(i) * q_dim + size_t(h) * hd);
  }
}

void CpuContext::keep(std::span<const int> rows) {
  if (last_batch_start_ < 0) throw std::logic_error("keep() without a preceding forward()");
  const int base = last_batch_start_;
  for (size_t r = 0; r < rows.size(); ++r) {
    const int src_row = rows[r];
    if (src_row < 0 || src_row >= last_batch_size_) throw std::out_of_range("keep(): row outside the last batch");
    if (r > 0 && src_row <= rows[r - 1]) throw std::invalid_argument("keep(): rows must increase");
    const int dst = base + int(r), src = base + src_row;
    if (dst == src) continue;
    for (size_t l = 0; l < k_cache_.size(); ++l) {
      std::memcpy(k_slot(int(l), dst), k_slot(int(l), src), sizeof(float) * kv_dim_);
      std::memcpy(v_slot(int(l), dst), v_slot(int(l), src), sizeof(float) * kv_dim_);
    }
    slot_pos_[dst] = slot_pos_[src];
  }
  n_past_ = base + int(rows.size());
  last_batch_start_ = -1;
}

void CpuContext::truncate(int n_past) {
  if (n_past < 0 || n_past > n_past_) throw std::out_of_range("truncate(): beyond the cache");
  n_past_ = n_past;
  last_batch_start_ = -1;
}

}  // namespace specscope
