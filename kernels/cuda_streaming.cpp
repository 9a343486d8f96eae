// Speculative Streaming inside CudaContext::forward (Bhendawade et al., arXiv 2402.11131): the GPU twin of
// engine/model/cpu_streaming.cpp, with the same rows decided by engine/model/streaming_rows.h.
//  * prune_rows: after the pruning adapter's layer, each parent row's early-exit distribution
//    softmax(lm_head(final_norm(h + up(down(h))))) on the GPU, copied to the host (parents x vocab floats) to
//    settle which rows survive. Unlike the CPU, the GPU keeps computing pruned rows (their results are discarded):
//    the mask of the later layers hides them from every row, so the survivors see exactly what they see on the CPU.
//  * begin_streams: stream j of a row starts from its residual state, up(down(h)) + P_j (eq. 3).
//  * stream_layer: stream j of a row (RoPE position pos + j + 1) attends to the keys/values of this layer that its
//    row sees (the cache, its alive tree ancestors, itself) and to streams 0..j of the same row (eq. 2), then the
//    layer's MLP. The batch attention kernel does it over an extended batch (cuda_context_impl.h's StreamBuffers);
//    the streams' keys never enter the cache.
//  * finish_streams: the final norm per stream; the caller applies the LM head to the streams it uses.
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>

#include "engine/cpu/ops.h"
#include "engine/heads/streaming_weights.h"
#include "engine/model/model.h"
#include "engine/model/streaming_rows.h"
#include "kernels/cuda_context_impl.h"
#include "kernels/llama_kernels.h"

namespace specscope::cuda {

namespace {
std::vector<int> all_rows(int n) {
  std::vector<int> rows(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) rows[size_t(i)] = i;
  return rows;
}
}  // namespace

const DeviceStreaming& CudaContext::streaming_tensors(const StreamingRequest& sr) {
  if (!ds_ || !ds_->copies(*sr.weights)) ds_ = std::make_unique<DeviceStreaming>(*sr.weights);
  return *ds_;
}

const uint8_t* CudaContext::prune_rows(const StreamingRequest& sr, const Batch& b, const float* x) {
  const auto& c = model_->config();
  const int n = batch_n_, H = c.hidden_size, V = c.vocab_size;
  const DeviceStreaming& sw = streaming_tensors(sr);
  const std::vector<int> rows = all_rows(n);
  const std::vector<int> parents = prune_parents(sr, rows);
  if (!parents.empty()) {
    const int np = int(parents.size()), r = sw.prune_down.rows;
    int32_t* d_par = p_rows_.get<int32_t>(size_t(np));
    float* e = p_e_.get<float>(size_t(np) * H);
    float* t = p_t_.get<float>(size_t(np) * r);
    float* u = p_u_.get<float>(size_t(np) * H);
    float* lg = p_logits_.get<float>(size_t(np) * V);
    CUDA_CHECK(cudaMemcpyAsync(d_par, parents.data(), sizeof(int32_t) * size_t(np), cudaMemcpyHostToDevice, stream_));
    timer_.mark("streaming", stream_);
    gather_rows(x, d_par, np, H, e, stream_);
    linear(e, np, sw.prune_down, nullptr, t);
    linear(t, np, sw.prune_up, nullptr, u);
    add(u, e, int64_t(np) * H, stream_);  // e = h + up(down(h))
    rmsnorm(e, dm_->final_norm, e, np, H, c.rms_norm_eps, stream_);
    linear(e, np, dm_->lm_head, nullptr, lg);
    finish_logits(lg, np);  // as the forward's logits
    std::vector<float> probs(size_t(np) * V);
    CUDA_CHECK(cudaMemcpyAsync(probs.data(), lg, sizeof(float) * probs.size(), cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (int k = 0; k < np; ++k) cpu::softmax(probs.data() + size_t(k) * V, V);
    settle_pruning(sr, b.tokens, rows, parents, probs.data(), V, alive_);
  }
  // The later layers' mask: the batch's own (or causal), with the pruned rows' columns cleared.
  const uint8_t* batch_mask = b.mask.empty() ? nullptr : b.mask.data();
  host_mask_.assign(size_t(n) * n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      host_mask_[size_t(i) * n + j] = batch_row_sees(i, j, n, batch_mask, alive_);
  uint8_t* m = mask_.get<uint8_t>(host_mask_.size());
  CUDA_CHECK(cudaMemcpyAsync(m, host_mask_.data(), host_mask_.size(), cudaMemcpyHostToDevice, stream_));
  return m;
}

void CudaContext::begin_streams(const StreamingRequest& sr, const Batch& b, const float* x,
                                const std::vector<int32_t>& pos) {
  const auto& c = model_->config();
  const int n = batch_n_, base = batch_base_, H = c.hidden_size, G = sr.streams;
  const int q_dim = c.num_heads * c.head_dim, F = c.intermediate_size;
  const DeviceStreaming& sw = streaming_tensors(sr);
  stream_src_ = stream_sources(sr, all_rows(n), alive_);
  const int S = int(stream_src_.size());
  n_streams_ = S * G;
  if (S == 0) return;
  const int m = n_streams_, ext = n + m, eta = sw.stream_down.rows;

  // Scratch for the whole forward (pointers kept: a buffer that grows frees its old memory).
  sb_.xs = xs_.get<float>(size_t(m) * H);
  sb_.scratch.h = s_h_.get<float>(size_t(std::max(m, S)) * std::max(H, eta));
  sb_.scratch.gate = s_gate_.get<float>(size_t(m) * F);
  sb_.scratch.up = s_up_.get<float>(size_t(std::max(m, S)) * std::max(F, H));
  if (c.moe()) {
    stream_moe_ = stream_moe_buffers_.take(c, m);
    sb_.scratch.moe = &stream_moe_;
  }
  sb_.q = ext_q_.get<float>(size_t(ext) * q_dim);
  sb_.k = ext_k_.get<float>(size_t(base + ext) * kv_dim_);
  sb_.v = ext_v_.get<float>(size_t(base + ext) * kv_dim_);
  sb_.att = ext_att_.get<float>(size_t(ext) * q_dim);
  sb_.slot_pos = ext_slot_pos_.get<int32_t>(size_t(base + ext));
  sb_.positions = ext_pos_.get<int32_t>(size_t(ext));
  sb_.mask = ext_mask_.get<uint8_t>(size_t(ext) * ext);

  // The streams' states: gather the source rows, the rank-eta map, one copy per stream plus its embedding.
  std::vector<int32_t> src(stream_src_.begin(), stream_src_.end()), each(static_cast<size_t>(m));
  for (int i = 0; i < m; ++i) each[size_t(i)] = i / G;
  int32_t* d_rows = s_rows_.get<int32_t>(size_t(S + m));
  CUDA_CHECK(cudaMemcpyAsync(d_rows, src.data(), sizeof(int32_t) * size_t(S), cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaMemcpyAsync(d_rows + S, each.data(), sizeof(int32_t) * size_t(m), cudaMemcpyHostToDevice, stream_));
  timer_.mark("streaming", stream_);
  float* hs = sb_.scratch.up;  // [S][H], then the map's output
  float* t = sb_.scratch.h;    // [S][eta]
  gather_rows(x, d_rows, S, H, hs, stream_);
  linear(hs, S, sw.stream_down, nullptr, t);
  linear(t, S, sw.stream_up, nullptr, hs);
  gather_rows(hs, d_rows + S, m, H, sb_.xs, stream_);
  add_bias(sb_.xs, sw.embeddings, m, H, stream_, G);

  // The extended batch's fixed parts: positions, slot positions, and the mask (pruning is settled by now: it
  // happens before the streams start, check_streaming).
  std::vector<int32_t> ext_pos(static_cast<size_t>(ext)), stream_pos(static_cast<size_t>(m));
  for (int i = 0; i < n; ++i) ext_pos[size_t(i)] = pos[size_t(i)];
  for (int i = 0; i < m; ++i) stream_pos[size_t(i)] = ext_pos[size_t(n + i)] = pos[size_t(stream_src_[size_t(i / G)])] + i % G + 1;
  CUDA_CHECK(cudaMemcpyAsync(sb_.positions, ext_pos.data(), sizeof(int32_t) * size_t(ext), cudaMemcpyHostToDevice,
                             stream_));
  CUDA_CHECK(cudaMemcpyAsync(sb_.slot_pos, slot_pos_, sizeof(int32_t) * size_t(base + n), cudaMemcpyDeviceToDevice,
                             stream_));
  CUDA_CHECK(cudaMemcpyAsync(sb_.slot_pos + base + n, stream_pos.data(), sizeof(int32_t) * size_t(m),
                             cudaMemcpyHostToDevice, stream_));
  const uint8_t* batch_mask = b.mask.empty() ? nullptr : b.mask.data();
  std::vector<uint8_t> mask(size_t(ext) * ext, 0);  // the main rows see no batch key (their outputs are unused)
  for (int i = 0; i < m; ++i) {
    const int s = i / G, j = i % G, row = stream_src_[size_t(s)];
    uint8_t* mi = mask.data() + size_t(n + i) * ext;
    for (int tcol = 0; tcol < n; ++tcol)
      mi[tcol] = batch_row_sees(row, tcol, n, batch_mask, alive_);
    for (int jj = 0; jj <= j; ++jj) mi[n + s * G + jj] = 1;
  }
  CUDA_CHECK(cudaMemcpyAsync(sb_.mask, mask.data(), mask.size(), cudaMemcpyHostToDevice, stream_));
  // The main rows' queries stay zero; each layer writes only the streams' rows. (The host vectors above may go:
  // a copy from pageable memory returns once it has staged them.)
  CUDA_CHECK(cudaMemsetAsync(sb_.q, 0, sizeof(float) * size_t(n) * q_dim, stream_));
}

void CudaContext::stream_layer(int l) {
  const auto& c = model_->config();
  const DeviceLayer& L = dm_->layers[size_t(l)];
  const int n = batch_n_, base = batch_base_, m = n_streams_, ext = n + m;
  const int hd = c.head_dim, nh = c.num_heads, nkv = c.num_kv_heads, q_dim = nh * hd;
  timer_.mark("streaming", stream_);
  // This layer's cache and batch keys/values (the main rows' layer has just written them), then the streams'.
  float* sq = sb_.q + size_t(n) * q_dim;
  float* sk = sb_.k + size_t(base + n) * kv_dim_;
  float* sv = sb_.v + size_t(base + n) * kv_dim_;
  CUDA_CHECK(cudaMemcpyAsync(sb_.k, k_cache_[size_t(l)], sizeof(float) * size_t(base + n) * kv_dim_,
                             cudaMemcpyDeviceToDevice, stream_));
  CUDA_CHECK(cudaMemcpyAsync(sb_.v, v_cache_[size_t(l)], sizeof(float) * size_t(base + n) * kv_dim_,
                             cudaMemcpyDeviceToDevice, stream_));
  project_qkv(L, sb_.xs, m, sb_.scratch.h, sq, sk, sv);
  const int32_t* stream_pos = sb_.positions + n;
  position_qk(l, sq, sk, m, stream_pos);
  // No sliding window for the streams, as on the CPU (cpu_streaming.cpp); the model's soft cap, as there.
  attention(sb_.q, sb_.k, sb_.v, sb_.slot_pos, sb_.mask, sb_.positions, ext, base, nh, nkv, hd, 0,
            model_->config().attn_soft_cap, sb_.att, stream_, attention_scratch_, row_tiles_);
  finish_layer(L, sb_.xs, m, sb_.att + size_t(n) * q_dim, sb_.scratch);
}

void CudaContext::finish_streams(const StreamingRequest& sr, ForwardOutput& out) {
  const auto& c = model_->config();
  const int H = c.hidden_size, m = n_streams_;
  out.streams = sr.streams;
  out.stream_rows = stream_src_;
  out.stream_hidden.resize(size_t(m) * H);
  rmsnorm(sb_.xs, dm_->final_norm, sb_.scratch.h, m, H, c.rms_norm_eps, stream_);
  CUDA_CHECK(cudaMemcpyAsync(out.stream_hidden.data(), sb_.scratch.h, sizeof(float) * size_t(m) * H,
                             cudaMemcpyDeviceToHost, stream_));
}

void CudaContext::mark_pruned(const Batch& b, ForwardOutput& out) const {
  const int n = batch_n_;
  out.pruned.assign(size_t(n), 0);
  for (int i = 0; i < n; ++i) out.pruned[size_t(i)] = alive_[size_t(i)] ? 0 : 1;
  const int V = model_->config().vocab_size, H = model_->config().hidden_size;
  // A pruned row's logits read NaN: in the whole copy here, in rows on demand when fetched (forward), and in a
  // summary its probabilities (its argmax is whatever the stale buffer held; verification never reads it).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t r = 0; r < out.logit_rows.size(); ++r) {
    if (alive_[size_t(out.logit_rows[r])]) continue;
    if (out.summarized()) {
      out.summaries[r].argmax_prob = nan;
      out.summaries[r].top_count = 0;
      if (!out.probe_start.empty())
        std::fill(out.probe_probs.begin() + out.probe_start[r], out.probe_probs.begin() + out.probe_start[r + 1], nan);
    } else if (!out.fetch_row) {
      std::fill(out.logits.begin() + r * V, out.logits.begin() + (r + 1) * V, nan);
    }
  }
  // Taps taken after the pruning layer read zeros for pruned rows, as the CPU backend gives them.
  if (b.streaming->parent_row.empty()) return;
  const int prune_layer = b.streaming->weights->config().prune_layer;
  for (size_t t = 0; t < b.taps.size(); ++t) {
    if (b.taps[t].kind == HiddenTap::LayerInput && b.taps[t].layer <= prune_layer) continue;
    if (out.hiddens[t].size() < size_t(n) * H) continue;  // a tap of no layer: nothing captured
    for (int i = 0; i < n; ++i)
      if (!alive_[size_t(i)]) std::fill(out.hiddens[t].begin() + size_t(i) * H, out.hiddens[t].begin() + size_t(i + 1) * H, 0.f);
  }
}

}  // namespace specscope::cuda
