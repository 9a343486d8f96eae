#include "engine/model/cpu_context.h"

#include "engine/cpu/thread_pool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/cpu/matmul.h"
#include "engine/cpu/attention.h"
#include "engine/cpu/op_profile.h"
#include "engine/cpu/ops.h"
#include "engine/heads/streaming_weights.h"
#include "engine/model/batch_checks.h"
#include "engine/model/final_logits.h"
#include "engine/model/streaming_rows.h"
#include "engine/model/model.h"
#include "engine/util/error.h"
#include "engine/util/interrupt.h"

namespace specscope {

CpuContext::CpuContext(std::shared_ptr<const Model> model, int n_ctx, cpu::WeightForm form) : model_(std::move(model)) {
  const auto& c = model_->config();
  n_ctx_ = n_ctx > 0 ? n_ctx : std::min(c.max_position_embeddings, 4096);
  key_head_dim_ = c.mla() ? c.cache_key_dim() : c.head_dim;
  kv_dim_ = c.cache_key_dim();
  v_dim_ = c.cache_value_dim();
  k_cache_.assign(c.num_layers, std::vector<float>(size_t(n_ctx_) * kv_dim_));
  v_cache_.assign(c.num_layers, std::vector<float>(size_t(n_ctx_) * v_dim_));
  kt_stride_ = cpu::kt_stride_for(n_ctx_);
  kt_cache_.assign(c.num_layers, std::vector<float>(size_t(kv_dim_) * kt_stride_));
  slot_pos_.assign(n_ctx_, 0);
  rope_ = cpu::RopeTable(rope_inv_freq(c, /*local=*/false, n_ctx_), c.head_dim, rope_attention_factor(c));
  if (c.rope_local_theta > 0.f) rope_local_ = cpu::RopeTable(rope_inv_freq(c, /*local=*/true), c.head_dim);
  // The model's one copy in that form, when asked for one; else its one copy in huge pages, where that is allowed.
  own_weights_ = model_->requantized_weights(form);
  if (!own_weights_) own_weights_ = model_->resident_weights();
  // Every linear layer's weight: its kernel copy made now, once per weight.
  for_each_linear(weights(), [](const TensorView& W) { cpu::prepare_linear(W); });
}

const ModelWeights& CpuContext::weights() const { return own_weights_ ? *own_weights_ : model_->weights(); }

cpu::RopeTable& CpuContext::rope_for(int layer) {
  return model_->config().local_rope(layer) ? rope_local_ : rope_;
}

void CpuContext::forward(const Batch& b, ForwardOutput& out) {
  const auto& c = model_->config();
  const auto& w = weights();
  const int n = b.size();
  const std::vector<int32_t> positions = checked_positions(b, c, n_past_, n_ctx_);
  const int32_t* pos = positions.data();

  // Only a sequence's first forward (the prompt) may use batch-variant kernels (OpenBLAS, the exact quantized
  // path's fused kernels): later batches must give each row the
  // bits it would get alone (cpu::BatchVariantKernels).
  const cpu::BatchVariantKernels variant(n_past_ == 0);
  const StreamingRequest* sr = b.streaming ? &*b.streaming : nullptr;
  if (sr) check_streaming(*sr, c, n);
  // The CPU returns full logits (they are in host memory already) and leaves summaries to verification, which
  // makes them only for the rows it visits; the probes are checked as a summarizing backend checks them.
  if (b.summaries_only) check_probes(b, b.logit_rows.empty() ? n : int(b.logit_rows.size()), c.vocab_size);

  const int H = c.hidden_size;
  grow(x_, size_t(n) * H);
  {
    const cpu::ProfileScope profile(cpu::Op::Embedding);
    for (int i = 0; i < n; ++i) cpu::embedding_row(w.embed, b.tokens[i], x_.data() + size_t(i) * H);
    if (c.embed_scale != 1.f)  // Gemma: times sqrt(hidden_size), the residual stream's first value
      for (size_t e = 0; e < size_t(n) * H; ++e) x_[e] *= c.embed_scale;
  }
  batch_n_ = n;
  active_.resize(n);
  for (int i = 0; i < n; ++i) active_[i] = i;
  alive_.assign(n, 1);
  forget_visible();
  int na = n;  // rows still computed; x_ holds them compacted, in batch order
  n_streams_ = 0;
  stream_src_.clear();

  out.reset(c.vocab_size, H, b.taps.size());
  // Taps are per batch row; pruned rows read as zeros.
  auto capture = [&](HiddenTap::Kind kind, int layer, const float* src) {
    for (size_t t = 0; t < b.taps.size(); ++t) {
      if (b.taps[t].kind != kind || (kind == HiddenTap::LayerInput && b.taps[t].layer != layer)) continue;
      out.hiddens[t].assign(size_t(n) * H, 0.f);
      for (int i = 0; i < na; ++i)
        std::memcpy(out.hiddens[t].data() + size_t(active_[i]) * H, src + size_t(i) * H, sizeof(float) * H);
    }
  };

  const int base = n_past_;
  for (int i = 0; i < n; ++i) slot_pos_[base + i] = pos[i];
  const uint8_t* mask = b.mask.empty() ? nullptr : b.mask.data();
  const int stream_start = sr ? c.num_layers - sr->msa_layers : c.num_layers;
  for (int l = 0; l < c.num_layers; ++l) {
    // A Stop during a long prefill takes effect at the next layer, not after the whole prompt
    // (engine/util/interrupt.h); n_past_ has not moved, so the cache is as it was.
    check_interrupt();
    if (sr && l == stream_start) begin_streams(*sr, na);
    capture(HiddenTap::LayerInput, l, x_.data());
    decoder_layer(l, na, pos, mask);
    if (n_streams_ > 0) stream_layer(l, *sr, pos, mask);
    if (sr && !sr->parent_row.empty() && l == sr->weights->config().prune_layer) na = prune_rows(*sr, b, na);
  }
  grow(h_, size_t(na) * H);
  {
    const cpu::ProfileScope profile(cpu::Op::Norm);
    cpu::rmsnorm(x_.data(), w.final_norm.data(), h_.data(), na, H, c.rms_norm_eps);
  }
  capture(HiddenTap::FinalNorm, 0, h_.data());

  // Logits only for the rows asked for: verification needs all, vanilla decode only the last. Rows pruned
  // inside the forward get NaN (nothing may read them).
  out.logit_rows = b.logit_rows;
  if (out.logit_rows.empty()) {
    out.logit_rows.resize(n);
    for (int i = 0; i < n; ++i) out.logit_rows[i] = i;
  }
  const int nr = int(out.logit_rows.size());
  const std::vector<int> index = active_index(na);
  std::vector<int> src_rows;  // active indices to project, and where they go
  std::vector<int> dst_rows;
  for (int r = 0; r < nr; ++r) {
    const int row = out.logit_rows[r];
    if (row < 0 || row >= n) throw InputError("batch", "logit row out of range");
    if (index[row] < 0) continue;
    src_rows.push_back(index[row]);
    dst_rows.push_back(r);
  }
  out.logits.resize(size_t(nr) * c.vocab_size);
  const cpu::ProfileScope lm_profile(cpu::Op::LmHead, double(w.lm_head.numel()) * double(src_rows.size()),
                                     double(w.lm_head.nbytes()));
  if (int(src_rows.size()) != nr)
    std::fill(out.logits.begin(), out.logits.end(), std::numeric_limits<float>::quiet_NaN());
  bool contiguous = int(src_rows.size()) == nr && nr == na;
  for (int r = 0; contiguous && r < nr; ++r) contiguous = src_rows[r] == r;
  if (contiguous) {
    cpu::linear(h_.data(), nr, w.lm_head, nullptr, out.logits.data());
  } else if (!src_rows.empty()) {
    const int ns = int(src_rows.size());
    std::vector<float> sel(size_t(ns) * H), lg(size_t(ns) * c.vocab_size);
    for (int r = 0; r < ns; ++r)
      std::memcpy(sel.data() + size_t(r) * H, h_.data() + size_t(src_rows[r]) * H, sizeof(float) * H);
    cpu::linear(sel.data(), ns, w.lm_head, nullptr, lg.data());
    for (int r = 0; r < ns; ++r)
      std::memcpy(out.logits.data() + size_t(dst_rows[r]) * c.vocab_size, lg.data() + size_t(r) * c.vocab_size,
                  sizeof(float) * c.vocab_size);
  }
  finish_logits(c, out.logits.data(), int64_t(out.logits.size()));
  if (sr) {
    out.pruned.assign(n, 0);
    for (int i = 0; i < n; ++i) out.pruned[i] = alive_[i] ? 0 : 1;
    if (n_streams_ > 0) finish_streams(*sr, out);
  }

  n_past_ += n;
  last_batch_start_ = base;
  last_batch_size_ = n;
  forwards += 1;
  forward_tokens += uint64_t(n);
}

std::vector<int> CpuContext::active_index(int na) const {
  std::vector<int> index(size_t(batch_n_), -1);
  for (int i = 0; i < na; ++i) index[size_t(active_[i])] = i;
  return index;
}

// The parts of a decoder layer around attention, shared by the main rows and Speculative Streaming's stream rows
// (cpu_streaming.cpp): scratch for `rows`, the input norm and the q/k/v projections (and the per-head q/k norms of
// Qwen3 and Gemma 3), before RoPE ...
void CpuContext::grow_mlp_scratch(int rows) {
  const auto& c = model_->config();
  const int F = c.intermediate_size;
  grow(h_, size_t(rows) * c.hidden_size);
  grow(att_, size_t(rows) * c.num_heads * c.value_dim());
  grow(ffn_gate_, size_t(rows) * F);
  grow(ffn_up_, size_t(rows) * F);
}

void CpuContext::project_qkv(const LayerWeights& L, const float* x, int rows) {
  const auto& c = model_->config();
  const int H = c.hidden_size, q_dim = c.num_heads * c.head_dim;
  grow_mlp_scratch(rows);
  grow(q_, size_t(rows) * q_dim);
  grow(k_, size_t(rows) * kv_dim_);
  grow(v_, size_t(rows) * kv_dim_);
  if (c.pre_norms) {  // (OLMo projects the residual stream itself)
    const cpu::ProfileScope profile(cpu::Op::Norm);
    cpu::rmsnorm(x, L.input_norm.data(), h_.data(), rows, H, c.rms_norm_eps);
  }
  const cpu::LinearOutput qkv[] = {{&L.wq, bias_or_null(L.bq), q_.data()},
                                   {&L.wk, bias_or_null(L.bk), k_.data()},
                                   {&L.wv, bias_or_null(L.bv), v_.data()}};
  cpu::linear_shared_input(c.pre_norms ? h_.data() : x, rows, qkv);
  if (c.qk_norm) {  // Qwen3, Gemma 3: every head's query and key normalized over head_dim; OLMo: each row's whole
    // query and whole key (ModelConfig::qk_norm_width); in place
    const cpu::ProfileScope profile(cpu::Op::Norm);
    const int qw = c.qk_norm_width(false), kw = c.qk_norm_width(true);
    cpu::rmsnorm(q_.data(), L.q_norm.data(), q_.data(), rows * q_dim / qw, qw, c.rms_norm_eps);
    cpu::rmsnorm(k_.data(), L.k_norm.data(), k_.data(), rows * kv_dim_ / kw, kw, c.rms_norm_eps);
  }
}

// x += h, or x += h * residual_scale (Granite), for `rows` rows.
void CpuContext::add_residual(const float* h, float* x, int rows) const {
  const auto& c = model_->config();
  const int64_t n = int64_t(rows) * c.hidden_size;
  if (c.residual_scale != 1.f) cpu::axpy(c.residual_scale, h, x, n);
  else cpu::add(h, x, n);
}

void CpuContext::gated_activation(float* gate, const float* up, int64_t n) const {
  const cpu::ProfileScope profile(cpu::Op::Elementwise);
  const auto& c = model_->config();
  if (c.swiglu_limit > 0.f) cpu::swiglu_clamped_mul(gate, up, gate, n, c.swiglu_limit, c.swiglu_alpha);
  else if (c.gelu()) cpu::gelu_tanh_mul(gate, up, gate, n);
  else cpu::silu_mul(gate, up, gate, n);
}

// ... and, once att_ holds the attention output, the output projection, the MLP and both residual adds into x.
void CpuContext::finish_layer(const LayerWeights& L, float* x, int rows) {
  const auto& c = model_->config();
  const int H = c.hidden_size, F = c.intermediate_size;
  cpu::linear(att_.data(), rows, L.wo, bias_or_null(L.bo), h_.data());
  {
    const cpu::ProfileScope profile(cpu::Op::Norm);
    // Gemma normalizes each sublayer's output before its residual add (in place).
    if (!L.attn_out_norm.empty()) cpu::rmsnorm(h_.data(), L.attn_out_norm.data(), h_.data(), rows, H, c.rms_norm_eps);
    add_residual(h_.data(), x, rows);
    if (c.pre_norms) cpu::rmsnorm(x, L.post_attn_norm.data(), h_.data(), rows, H, c.rms_norm_eps);
    else std::memcpy(h_.data(), x, sizeof(float) * size_t(rows) * size_t(H));  // OLMo: the MLP reads the stream
  }
  if (!L.experts.empty()) {
    moe_mlp(L, rows);
  } else {
    const cpu::LinearOutput gate_up[] = {{&L.w_gate, bias_or_null(L.b_gate), ffn_gate_.data()},
                                         {&L.w_up, bias_or_null(L.b_up), ffn_up_.data()}};
    cpu::linear_shared_input(h_.data(), rows, gate_up);
    gated_activation(ffn_gate_.data(), ffn_up_.data(), int64_t(rows) * F);
    cpu::linear(ffn_gate_.data(), rows, L.w_down, bias_or_null(L.b_down), h_.data());
  }
  {
    const cpu::ProfileScope profile(cpu::Op::Elementwise);
    if (!L.ffn_out_norm.empty()) cpu::rmsnorm(h_.data(), L.ffn_out_norm.data(), h_.data(), rows, H, c.rms_norm_eps);
    add_residual(h_.data(), x, rows);
  }
}

// One decoder layer over the `na` active rows in x_ (in place). Each row's keys/values go to its own cache slot.
void CpuContext::decoder_layer(int l, int na, const int32_t* pos, const uint8_t* mask) {
  const auto& c = model_->config();
  const auto& L = weights().layers[l];
  if (c.mla()) {
    mla_project(l, na, pos);
    attention(l, na, pos, mask);
    mla_values(L, na);
    finish_layer(L, x_.data(), na);
    return;
  }
  const int hd = c.head_dim, q_dim = c.num_heads * hd, base = n_past_;
  project_qkv(L, x_.data(), na);
  {
    const cpu::ProfileScope profile(cpu::Op::Rope);
    cpu::RopeTable& rope = rope_for(l);
    const bool turns = c.rope_in(l);  // SmolLM3's NoPE layers: positions reach attention only through the mask
    for (int i = 0; i < na; ++i) {
      const int row = active_[i];
      if (turns) {
        rope.apply(q_.data() + size_t(i) * q_dim, c.num_heads, pos[row]);
        rope.apply(k_.data() + size_t(i) * kv_dim_, c.num_kv_heads, pos[row]);
      }
      std::memcpy(k_slot(l, base + row), k_.data() + size_t(i) * kv_dim_, sizeof(float) * kv_dim_);
      std::memcpy(v_slot(l, base + row), v_.data() + size_t(i) * kv_dim_, sizeof(float) * kv_dim_);
    }
    put_kt_rows(l, na);
  }
  attention(l, na, pos, mask);
  finish_layer(L, x_.data(), na);
}

void CpuContext::attention(int layer, int na, const int32_t* pos, const uint8_t* mask) {
  const auto& c = model_->config();
  // MLA: every head's absorbed query against one key head (the latent and the rotary key), summing the latent.
  const int hd = key_head_dim_, nh = c.num_heads, vd = c.mla() ? v_dim_ : hd;
  const int q_dim = nh * hd, total = n_past_ + batch_n_;
  const cpu::ProfileScope profile(cpu::Op::Attention, double(na) * nh * total * (hd + vd));
  // Which keys each active row sees: computed once per forward for each kind of layer (every layer has the same
  // rows), again after pruning.
  const int window = c.window_of(layer);
  Visible& vis = visible_[window > 0];
  if (!vis.current) compute_visible(na, pos, mask, window);
  cpu::AttentionArgs a;
  a.q = c.mla() ? mla_q_.data() : q_.data();
  a.q_stride = size_t(q_dim);
  a.rows = na;
  a.heads = nh;
  a.kv_heads = c.mla() ? 1 : c.num_kv_heads;
  a.head_dim = hd;
  a.v_dim = vd;
  a.kt = kt_cache_[layer].data();
  a.kt_stride = kt_stride_;
  a.v = v_cache_[layer].data();
  a.v_stride = size_t(v_dim_);
  a.keys = total;
  a.visible = vis.keys.data();
  a.seen = &vis.packed;
  a.scale = c.attention_scale();
  a.soft_cap = c.attn_soft_cap;
  a.sinks = bias_or_null(weights().layers[size_t(layer)].sinks);
  a.out = c.mla() ? mla_lat_.data() : att_.data();
  a.out_stride = size_t(nh) * size_t(vd);
  cpu::attention(a);
}

// Which keys each active row sees: the cache before the batch (within a sliding window), and the batch rows its mask
// (or causality) allows that are still alive.
void CpuContext::compute_visible(int na, const int32_t* pos, const uint8_t* mask, int window) {
  Visible& out = visible_[window > 0];
  const int base = n_past_, n = batch_n_, total = base + n;
  out.keys.resize(size_t(na) * size_t(total));
  for (int i = 0; i < na; ++i) {
    const int row = active_[i];
    uint8_t* vis = out.keys.data() + size_t(i) * size_t(total);
    for (int j = 0; j < total; ++j) {
      bool visible = j < base || batch_row_sees(row, j - base, n, mask, alive_);
      if (visible && window > 0 && pos[row] - slot_pos_[j] >= window) visible = false;
      vis[j] = visible ? 1 : 0;
    }
  }
  out.packed.build(out.keys.data(), na, total);
  out.current = true;
}

// Dimension by dimension for all rows at once: the rows' slots are adjacent in each dimension's tile row, so a step of
// several rows writes each cache line of the transposed keys once instead of once per row.
void CpuContext::put_kt_rows(int layer, int na) {
  const int hd = key_head_dim_;
  float* kt = kt_cache_[size_t(layer)].data();
  // Each row's place within a dimension's tile row, computed once rather than for every element (the index
  // arithmetic per element was most of this function's time in an 8-row step).
  kt_offsets_.resize(size_t(na));
  for (int i = 0; i < na; ++i) kt_offsets_[size_t(i)] = cpu::kt_index(0, 0, n_past_ + active_[i], hd, kt_stride_);
  for (int kvh = 0; kvh < kv_dim_ / hd; ++kvh)
    for (int d = 0; d < hd; ++d) {
      float* dim = kt + cpu::kt_index(kvh, d, 0, hd, kt_stride_);
      const float* src = k_.data() + size_t(kvh) * hd + size_t(d);
      for (int i = 0; i < na; ++i) dim[kt_offsets_[size_t(i)]] = src[size_t(i) * kv_dim_];
    }
}

void CpuContext::move_kt(int layer, int dst, int src) {
  const int hd = key_head_dim_;
  float* kt = kt_cache_[size_t(layer)].data();
  for (int e = 0; e < kv_dim_; ++e)
    kt[cpu::kt_index(e / hd, e % hd, dst, hd, kt_stride_)] = kt[cpu::kt_index(e / hd, e % hd, src, hd, kt_stride_)];
}

void CpuContext::keep(std::span<const int> rows) {
  check_keep_rows(rows, last_batch_start_, last_batch_size_);
  const int base = last_batch_start_;
  for (size_t r = 0; r < rows.size(); ++r) {
    const int dst = base + int(r), src = base + rows[r];
    if (dst == src) continue;
    for (size_t l = 0; l < k_cache_.size(); ++l) {
      std::memcpy(k_slot(int(l), dst), k_slot(int(l), src), sizeof(float) * kv_dim_);
      std::memcpy(v_slot(int(l), dst), v_slot(int(l), src), sizeof(float) * v_dim_);
      move_kt(int(l), dst, src);
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
