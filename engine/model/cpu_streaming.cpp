// Speculative Streaming inside CpuContext::forward (Bhendawade et al., arXiv 2402.11131; the reference forward
// is training/streaming_model.py, and tests/streaming_forward_test.cpp holds the two together):
//  * prune_rows: after the pruning adapter's layer, each tree row's parent gives early-exit logits
//    lm_head(final_norm(h + up(down(h)))); a row whose token gets a probability below the threshold there is
//    dropped with its subtree, so the upper layers (and the streams) never see it.
//  * begin_streams: at the first multi-stream attention (MSA) layer, stream j of a row starts from the row's
//    residual state: up(down(h)) + P_j (eq. 3).
//  * stream_layer: in each MSA layer, stream j of a row (RoPE position pos + j + 1) attends to the main stream's
//    keys/values of this layer that the row itself sees (cache and tree ancestors, itself included) and to
//    streams 0..j of the same row (eq. 2); then the layer's MLP. Streams never enter the cache.
//  * finish_streams: the final norm per stream (the caller applies the LM head to the streams it uses).
#include "engine/cpu/thread_pool.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "engine/cpu/matmul.h"
#include "engine/cpu/ops.h"
#include "engine/heads/streaming_weights.h"
#include "engine/model/cpu_context.h"
#include "engine/model/final_logits.h"
#include "engine/model/model.h"
#include "engine/model/streaming_rows.h"
#include "engine/util/error.h"

namespace specscope {

int CpuContext::prune_rows(const StreamingRequest& sr, const Batch& b, int na) {
  const auto& c = model_->config();
  const auto& w = weights();
  const StreamingWeights& sw = *sr.weights;
  const int H = c.hidden_size, V = c.vocab_size, r = sw.config().prune_rank;
  // Early-exit distributions of the rows that are parents of some active row.
  const std::vector<int> index = active_index(na);
  const std::span<const int> rows(active_.data(), size_t(na));
  const std::vector<int> parents = prune_parents(sr, rows);
  if (parents.empty()) return na;
  const int np = int(parents.size());
  std::vector<float> e(size_t(np) * H), t(size_t(np) * r), u(size_t(np) * H), lg(size_t(np) * V);
  for (int k = 0; k < np; ++k) {
    const int ai = index[parents[k]];
    if (ai < 0) throw std::logic_error("prune_rows: a parent row is not active");
    std::memcpy(e.data() + size_t(k) * H, x_.data() + size_t(ai) * H, sizeof(float) * H);
  }
  cpu::linear(e.data(), np, sw.prune_down, nullptr, t.data());
  cpu::linear(t.data(), np, sw.prune_up, nullptr, u.data());
  cpu::add(u.data(), e.data(), int64_t(np) * H);  // e = h + up(down(h))
  cpu::rmsnorm(e.data(), w.final_norm.data(), e.data(), np, H, c.rms_norm_eps);
  cpu::linear(e.data(), np, w.lm_head, nullptr, lg.data());
  finish_logits(c, lg.data(), int64_t(lg.size()));  // as the forward's logits
  for (int k = 0; k < np; ++k) cpu::softmax(lg.data() + size_t(k) * V, V);
  settle_pruning(sr, b.tokens, rows, parents, lg.data(), V, alive_);
  // Compact the survivors in x_ and active_, in batch order.
  int kept = 0;
  for (int i = 0; i < na; ++i) {
    const int row = active_[i];
    if (!alive_[row]) continue;
    if (kept != i) std::memcpy(x_.data() + size_t(kept) * H, x_.data() + size_t(i) * H, sizeof(float) * H);
    active_[kept++] = row;
  }
  active_.resize(kept);
  forget_visible();  // fewer rows, and keys of pruned rows no longer visible
  return kept;
}

void CpuContext::begin_streams(const StreamingRequest& sr, int na) {
  const auto& c = model_->config();
  const StreamingWeights& sw = *sr.weights;
  const int H = c.hidden_size, G = sr.streams, eta = sw.config().stream_rank;
  const std::vector<int> index = active_index(na);
  stream_src_ = stream_sources(sr, std::span<const int>(active_.data(), size_t(na)), alive_);
  const int S = int(stream_src_.size());
  n_streams_ = S * G;
  if (S == 0) return;
  std::vector<float> h(size_t(S) * H), t(size_t(S) * eta), u(size_t(S) * H);
  for (int s = 0; s < S; ++s)
    std::memcpy(h.data() + size_t(s) * H, x_.data() + size_t(index[stream_src_[s]]) * H, sizeof(float) * H);
  cpu::linear(h.data(), S, sw.stream_down, nullptr, t.data());
  cpu::linear(t.data(), S, sw.stream_up, nullptr, u.data());
  xs_.resize(size_t(n_streams_) * H);
  for (int s = 0; s < S; ++s)
    for (int j = 0; j < G; ++j) {
      float* dst = xs_.data() + (size_t(s) * G + j) * H;
      const float* src = u.data() + size_t(s) * H;
      const float* emb = sw.embeddings.data() + size_t(j) * H;
      for (int d = 0; d < H; ++d) dst[d] = src[d] + emb[d];
    }
}

void CpuContext::stream_layer(int l, const StreamingRequest& sr, const int32_t* pos, const uint8_t* mask) {
  const auto& c = model_->config();
  const auto& L = weights().layers[l];
  const int hd = c.head_dim, nh = c.num_heads, group = c.num_heads / c.num_kv_heads;
  const int q_dim = nh * hd, G = sr.streams, m = n_streams_;
  const int base = n_past_, n = batch_n_;
  const float scale = c.attention_scale(), cap = c.attn_soft_cap;
  cpu::RopeTable& rope = rope_for(l);
  // The main rows' scratch is free again: the layer's main pass is done and its keys/values are in the cache.
  project_qkv(L, xs_.data(), m);
  for (int s = 0; s < m / G && c.rope_in(l); ++s)  // (SmolLM3's NoPE layers turn nothing)
    for (int j = 0; j < G; ++j) {
      const int i = s * G + j, p = pos[stream_src_[s]] + j + 1;
      rope.apply(q_.data() + size_t(i) * q_dim, nh, p);
      rope.apply(k_.data() + size_t(i) * kv_dim_, c.num_kv_heads, p);
    }
  const float* kc = k_cache_[l].data();
  const float* vc = v_cache_[l].data();
  const int total = base + n + G;
  const bool sinks = !L.sinks.empty();  // GPT-OSS: the head's sink joins the softmax as one more logit, then dropped
  const int slots = total + (sinks ? 1 : 0);
  grow(scores_, size_t(cpu::team_size()) * slots);
  const int tasks = m * nh;
  cpu::run_team(tasks, size_t(tasks) * total * hd, 262144, [&](int tid, int nt) {
  for (int task = tasks * tid / nt; task < tasks * (tid + 1) / nt; ++task) {
    const int i = task / nh, h = task % nh, kvh = h / group;
    const int s = i / G, j = i % G, row = stream_src_[s];
    float* sc = scores_.data() + size_t(tid) * slots;
    const float* q = q_.data() + size_t(i) * q_dim + size_t(h) * hd;
    // Keys: the cache and the batch rows this stream's row sees, then streams 0..j of the row. Scores as the main
    // rows' attention gives them: scaled, the row soft-capped with the same vector tanh (Gemma 2), and only then the
    // hidden slots set to -inf (a cap would turn -inf into -cap).
    auto visible = [&](int t) {
      if (t >= base + n) return t - base - n <= j;
      return t < base || batch_row_sees(row, t - base, n, mask, alive_);
    };
    for (int t = 0; t < total; ++t) {
      const float* k = t < base + n ? kc + size_t(t) * kv_dim_ : k_.data() + size_t(s * G + t - base - n) * kv_dim_;
      sc[t] = visible(t) ? cpu::dot(q, k + size_t(kvh) * hd, hd) * scale : 0.f;
    }
    if (cap > 0.f) cpu::soft_cap(sc, cap, total);
    for (int t = 0; t < total; ++t)
      if (!visible(t)) sc[t] = -std::numeric_limits<float>::infinity();
    if (sinks) sc[total] = L.sinks[size_t(h)];
    cpu::softmax(sc, slots);
    float* o = att_.data() + size_t(i) * q_dim + size_t(h) * hd;
    for (int d = 0; d < hd; ++d) o[d] = 0.f;
    for (int t = 0; t < base + n; ++t)
      if (sc[t] != 0.f) cpu::axpy(sc[t], vc + size_t(t) * kv_dim_ + size_t(kvh) * hd, o, hd);
    for (int jj = 0; jj <= j; ++jj)
      cpu::axpy(sc[base + n + jj], v_.data() + size_t(s * G + jj) * kv_dim_ + size_t(kvh) * hd, o, hd);
  }
  });
  finish_layer(L, xs_.data(), m);
}

void CpuContext::finish_streams(const StreamingRequest& sr, ForwardOutput& out) {
  const auto& c = model_->config();
  const int H = c.hidden_size, m = n_streams_;
  out.streams = sr.streams;
  out.stream_rows = stream_src_;
  out.stream_hidden.resize(size_t(m) * H);
  cpu::rmsnorm(xs_.data(), weights().final_norm.data(), out.stream_hidden.data(), m, H, c.rms_norm_eps);
}

}  // namespace specscope
