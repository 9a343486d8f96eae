#include "kernels/cuda_context.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/heads/streaming_weights.h"
#include "engine/model/batch_checks.h"
#include "engine/model/model.h"
#include "engine/model/streaming_rows.h"
#include "engine/util/error.h"
#include "kernels/attention_paths.h"
#include "kernels/cuda_check.h"
#include "kernels/cuda_context_impl.h"
#include "kernels/device_model.h"
#include "kernels/llama_kernels.h"

namespace specscope::cuda {

CudaContext::CudaContext(std::shared_ptr<const Model> model, int n_ctx) : model_(std::move(model)) {
  const auto& c = model_->config();
  if (c.head_dim > attention_paths::kMaxWideHeadDim)
    throw InputError(model_->path(), "the CUDA backend's attention takes head_dim up to " +
                                         std::to_string(attention_paths::kMaxWideHeadDim) + ", this model's is " +
                                         std::to_string(c.head_dim) + "; use --backend cpu");
  n_ctx_ = n_ctx > 0 ? n_ctx : std::min(c.max_position_embeddings, 4096);
  if (c.head_dim > attention_paths::kMaxHeadDim) {  // every call one row a block: its scores in shared memory
    const int most = attention_paths::single_block_max_slots();
    if (n_ctx_ > most)
      throw InputError(model_->path(), "the CUDA backend's attention for heads of " + std::to_string(c.head_dim) +
                                           " holds at most " + std::to_string(most) + " positions on this GPU, not " +
                                           std::to_string(n_ctx_) + "; use --context " + std::to_string(most) +
                                           " or --backend cpu");
  }
  kv_dim_ = c.num_kv_heads * c.head_dim;
  dm_ = DeviceModel::of(*model_);
  CUDA_CHECK(cudaStreamCreate(&stream_));
  CUDA_CHECK(cublasCreate(&blas_));
  CUDA_CHECK(cublasSetStream(blas_, stream_));
  if (use_graphs_) {
    // cuBLAS's own workspace, given up front: a capture must not allocate (cuBLAS's advice for graph capture).
    CUDA_CHECK(cudaMalloc(&blas_workspace_, kBlasWorkspaceBytes));
    CUDA_CHECK(cublasSetWorkspace(blas_, blas_workspace_, kBlasWorkspaceBytes));
  }
  k_cache_.resize(c.num_layers);
  v_cache_.resize(c.num_layers);
  // Zeroed, as the CPU backend's cache is: a slot no forward wrote (a row pruned by Speculative Streaming, see
  // write_cache) reads as zeros on both backends, never as whatever the allocation held.
  for (int l = 0; l < c.num_layers; ++l) {
    CUDA_CHECK(cudaMalloc(&k_cache_[l], sizeof(float) * size_t(n_ctx_) * kv_dim_));
    CUDA_CHECK(cudaMalloc(&v_cache_[l], sizeof(float) * size_t(n_ctx_) * kv_dim_));
    CUDA_CHECK(cudaMemset(k_cache_[l], 0, sizeof(float) * size_t(n_ctx_) * kv_dim_));
    CUDA_CHECK(cudaMemset(v_cache_[l], 0, sizeof(float) * size_t(n_ctx_) * kv_dim_));
  }
  CUDA_CHECK(cudaMalloc(&slot_pos_, sizeof(int32_t) * size_t(n_ctx_)));
  attention_scratch_.floats = attention_scratch_floats(c.num_heads, c.head_dim, n_ctx_);
  CUDA_CHECK(cudaMalloc(&attention_scratch_.data, sizeof(float) * attention_scratch_.floats));
}

CudaContext::~CudaContext() {
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
  for (auto* p : k_cache_) cudaFree(p);
  for (auto* p : v_cache_) cudaFree(p);
  cudaFree(slot_pos_);
  cudaFree(attention_scratch_.data);
  if (blas_workspace_) cudaFree(blas_workspace_);
  cublasDestroy(blas_);
  cudaStreamDestroy(stream_);
}

// The keys and values of the batch's n rows (k, v: n x kv_dim) into layer l's cache slots base..base+n-1, as the CPU
// backend writes them: only rows still alive (alive_). A row Speculative Streaming pruned is still computed here
// through the later layers (cuda_streaming.cpp), but like the CPU this backend leaves its slots as they were, so a
// forward that reads them before keep() drops the row sees the same on both. One copy per run of alive rows: one
// for the whole batch outside streaming.
void CudaContext::write_cache(int l, int base, int n, const float* k, const float* v) {
  const size_t row = sizeof(float) * size_t(kv_dim_);
  for (int i = 0; i < n;) {
    if (!alive_[size_t(i)]) {
      ++i;
      continue;
    }
    int e = i + 1;
    while (e < n && alive_[size_t(e)]) ++e;
    const size_t at = size_t(base + i) * kv_dim_, from = size_t(i) * kv_dim_, bytes = row * size_t(e - i);
    CUDA_CHECK(cudaMemcpyAsync(k_cache_[l] + at, k + from, bytes, cudaMemcpyDeviceToDevice, stream_));
    CUDA_CHECK(cudaMemcpyAsync(v_cache_[l] + at, v + from, bytes, cudaMemcpyDeviceToDevice, stream_));
    i = e;
  }
}

void CudaContext::linear(const float* X, int n, const DeviceMatrix& W, const float* bias, float* Y) {
  product(X, product_input(X, n, W), n, W, bias, Y);
}

void CudaContext::linear_each(const float* X, int n, std::initializer_list<Output> outs, const void* x16) {
  if (x16) {
    for (const Output& o : outs) product(X, x16, n, *o.W, o.bias, o.Y);
    return;
  }
  const void* x = nullptr;
  const DeviceMatrix* made_for = nullptr;  // the matrix whose type and width x was made for
  for (const Output& o : outs) {
    const bool reuse = fuse_ && made_for && made_for->type == o.W->type && made_for->cols == o.W->cols;
    if (!reuse) {
      x = product_input(X, n, *o.W);
      made_for = o.W;
    }
    product(X, x, n, *o.W, o.bias, o.Y);
  }
}

WType CudaContext::premade_input_type(std::initializer_list<const DeviceMatrix*> ms) const {
  const WType t = (*ms.begin())->type;
  if (!fuse_ || (t != WType::F16 && t != WType::BF16)) return WType::F32;
  for (const DeviceMatrix* m : ms)
    if (m->type != t) return WType::F32;
  return t;
}

const void* CudaContext::product_input(const float* X, int n, const DeviceMatrix& W) {
  // The product's input in the weights' type: the activations themselves for f32 weights (and for GGUF blocks,
  // dequantized to f32 panels), a 16-bit copy for f16/bf16 ones (both paths multiply 16-bit weights by 16-bit
  // activations, summing in f32).
  if (is_block(W.type) || W.type == WType::F32) return X;
  void* xh = half_.get<uint16_t>(size_t(n) * W.cols);
  to_half(X, xh, W.type, int64_t(n) * W.cols, stream_);
  return xh;
}

void CudaContext::product(const float* X, const void* x, int n, const DeviceMatrix& W, const float* bias, float* Y) {
  const float alpha = 1.f, beta = 0.f;
  const int m = W.rows, k = W.cols;
  // Row-major Y = X W^T is column-major Y^T (m x n) = W (k x m)^T X^T (k x n).
  if (is_block(W.type) && use_gemv_ && block_gemv_fits(W.type, std::min(n, kGemvMaxRows), k, X)) {
    // GGUF blocks read as blocks (gemv.cu's block_gemv), in groups of kGemvMaxRows rows: as the 16-bit weights go to
    // gemv() under the same setting, one path for every batch size.
    for (int r0 = 0; r0 < n; r0 += kGemvMaxRows)
      block_gemv(W.data, W.type, X + size_t(r0) * k, std::min(kGemvMaxRows, n - r0), m, k, Y + size_t(r0) * m, stream_);
  } else if (is_block(W.type)) {
    // GGUF blocks: panels of at most 16 MB of rows dequantized exactly to f32, each multiplied at once (the model
    // itself is never expanded). Columns p0.. of Y^T (column-major, leading dimension m) are Y + p0.
    const int panel = std::max(1, std::min(m, int((size_t(16) << 20) / (sizeof(float) * size_t(std::max(k, 1))))));
    float* wp = panel_.get<float>(size_t(panel) * k);
    for (int p0 = 0; p0 < m; p0 += panel) {
      const int pr = std::min(panel, m - p0);
      dequant_rows(W.data, W.type, k, p0, pr, wp, stream_);
      CUDA_CHECK(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, pr, n, k, &alpha, wp, CUDA_R_32F, k, X, CUDA_R_32F, k,
                              &beta, Y + p0, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
  } else {
    const size_t elem = dense_element_bytes(W.type);
    if (use_gemv_ && gemv_fits(W.type, std::min(n, kGemvMaxRows), k, W.data, x)) {
      // In groups of kGemvMaxRows rows, each group's rows contiguous in x and Y.
      for (int r0 = 0; r0 < n; r0 += kGemvMaxRows)
        gemv(W.data, W.type, static_cast<const char*>(x) + size_t(r0) * k * elem, std::min(kGemvMaxRows, n - r0), m,
             k, Y + size_t(r0) * m, stream_);
    } else {
      const cudaDataType t = W.type == WType::F32 ? CUDA_R_32F : W.type == WType::F16 ? CUDA_R_16F : CUDA_R_16BF;
      CUDA_CHECK(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, W.data, t, k, x, t, k, &beta, Y,
                              CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
  }
  if (bias) add_bias(Y, bias, n, m, stream_);
}

void CudaContext::forward(const Batch& b, ForwardOutput& out) {
  const auto& c = model_->config();
  const int n = b.size();
  const StreamingRequest* sr = b.streaming ? &*b.streaming : nullptr;
  if (sr) check_streaming(*sr, c, n);
  const std::vector<int32_t> pos = checked_positions(b, c, n_past_, n_ctx_);
  out.reset(c.vocab_size, c.hidden_size, b.taps.size());
  out.logit_rows = b.logit_rows;
  if (out.logit_rows.empty()) {
    out.logit_rows.resize(n);
    for (int i = 0; i < n; ++i) out.logit_rows[i] = i;
  }
  const int nr = int(out.logit_rows.size());
  for (int r : out.logit_rows)
    if (r < 0 || r >= n) throw InputError("batch", "logit row out of range");

  // Everything the host sends goes first, so that the device work after it can be one CUDA graph.
  const int H = c.hidden_size, q_dim = c.num_heads * c.head_dim, F = c.intermediate_size, base = n_past_;
  ForwardBuffers fb;
  fb.tokens = tokens_.get<int32_t>(n);
  fb.pos = pos_.get<int32_t>(n);
  fb.rows = rows_.get<int32_t>(nr);
  fb.logit_rows = nr;
  CUDA_CHECK(cudaMemcpyAsync(fb.tokens, b.tokens.data(), sizeof(int32_t) * n, cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaMemcpyAsync(fb.pos, pos.data(), sizeof(int32_t) * n, cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaMemcpyAsync(slot_pos_ + base, pos.data(), sizeof(int32_t) * n, cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaMemcpyAsync(fb.rows, out.logit_rows.data(), sizeof(int32_t) * nr, cudaMemcpyHostToDevice, stream_));
  // Summaries instead of logits (Batch::summaries_only); with streaming, mark_pruned then marks the pruned rows'.
  const bool summarize = b.summaries_only;
  if (b.summaries_only) check_probes(b, nr, c.vocab_size);
  const bool probes = summarize && !b.probe_start.empty();
  int32_t* probe_start = nullptr;
  int32_t* probe_tokens = nullptr;
  if (probes) {
    probe_start = probe_start_.get<int32_t>(b.probe_start.size());
    probe_tokens = probe_tokens_.get<int32_t>(std::max<size_t>(1, b.probe_tokens.size()));
    CUDA_CHECK(cudaMemcpyAsync(probe_start, b.probe_start.data(), sizeof(int32_t) * b.probe_start.size(),
                               cudaMemcpyHostToDevice, stream_));
    if (!b.probe_tokens.empty())
      CUDA_CHECK(cudaMemcpyAsync(probe_tokens, b.probe_tokens.data(), sizeof(int32_t) * b.probe_tokens.size(),
                                 cudaMemcpyHostToDevice, stream_));
  }
  if (!b.mask.empty()) {
    uint8_t* m = mask_.get<uint8_t>(b.mask.size());
    CUDA_CHECK(cudaMemcpyAsync(m, b.mask.data(), b.mask.size(), cudaMemcpyHostToDevice, stream_));
    fb.mask = m;
  }
  fb.x = x_.get<float>(size_t(n) * H);
  fb.h = h_.get<float>(size_t(n) * H);
  fb.q = q_.get<float>(size_t(n) * q_dim);
  fb.k = k_.get<float>(size_t(n) * kv_dim_);
  fb.v = v_.get<float>(size_t(n) * kv_dim_);
  fb.att = att_.get<float>(size_t(n) * q_dim);
  fb.gate = gate_.get<float>(size_t(n) * F);
  fb.up = up_.get<float>(size_t(n) * F);
  // 16-bit elements: a product's input (q/k/v and gate/up take H wide, down F).
  fb.x16 = x16_.get<uint16_t>(size_t(n) * std::max(H, F));
  if (!dm_->layers.empty() && dm_->layers.front().wqkv.data) fb.qkv = qkv_.get<float>(size_t(n) * (q_dim + 2 * kv_dim_));
  fb.sel = sel_.get<float>(size_t(nr) * H);
  fb.logits = logits_.get<float>(size_t(nr) * c.vocab_size);
  fb.taps = b.taps.empty() ? nullptr : taps_.get<float>(b.taps.size() * size_t(n) * H);
  if (c.moe()) fb.moe = moe_buffers_.take(c, n);
  batch_n_ = n;
  batch_base_ = base;
  alive_.assign(size_t(n), 1);
  stream_src_.clear();
  n_streams_ = 0;

  // A CUDA graph (SPECSCOPE_CUDA_GRAPHS=1) once a batch of this shape has run once without one (so that no buffer
  // grows while capturing); streaming (it reads pruning's results on the host mid-forward) and the op profiler
  // (events) always run op by op.
  if (use_graphs_ && !sr && !timer_.on()) {
    GraphKey key{n, nr, b.mask.empty() ? 0 : 1, {}};
    for (const auto& t : b.taps) key.taps.push_back(t.kind == HiddenTap::FinalNorm ? -1 : t.layer);
    if (warm_shapes_.count(key)) {
      launch_as_graph(key, [&] { device_forward(b, fb, pos); });
    } else {
      device_forward(b, fb, pos);
      warm_shapes_.insert(std::move(key));
    }
  } else {
    device_forward(b, fb, pos);
  }

  if (summarize) {
    // Greedy verification's reads of the logits, made on the device: a few dozen bytes a row cross to the host.
    timer_.mark("summaries", stream_);
    LogitSummary* sums = summaries_.get<LogitSummary>(size_t(nr));
    float* pp = probe_probs_.get<float>(std::max<size_t>(1, b.probe_tokens.size()));
    if (summary_chunks_ && c.vocab_size >= 2 * kSummaryChunk)
      logit_summaries_chunked(fb.logits, nr, c.vocab_size, probes ? probe_start : nullptr, probe_tokens, sums, pp,
                              summary_parts_.get<uint8_t>(summary_scratch_bytes(nr, c.vocab_size)), stream_);
    else
      logit_summaries(fb.logits, nr, c.vocab_size, probes ? probe_start : nullptr, probe_tokens, sums, pp, stream_);
    out.summaries.resize(size_t(nr));
    CUDA_CHECK(cudaMemcpyAsync(out.summaries.data(), sums, sizeof(LogitSummary) * size_t(nr), cudaMemcpyDeviceToHost,
                               stream_));
    out.probe_start = b.probe_start;
    out.probe_tokens = b.probe_tokens;
    out.probe_probs.resize(b.probe_tokens.size());
    if (!out.probe_probs.empty())
      CUDA_CHECK(cudaMemcpyAsync(out.probe_probs.data(), pp, sizeof(float) * out.probe_probs.size(),
                                 cudaMemcpyDeviceToHost, stream_));
  } else if (b.rows_on_demand) {
    // Sampled verification: each row crosses when verification first reads it (about tau rows of a tree), from
    // logits_, which stays as it is until this context's next forward (checked: the rows of an earlier forward
    // would be another batch's). A row streaming pruned reads NaN, as a whole copy gives it (mark_pruned).
    const uint64_t forward_id = forwards + 1;  // this forward's number once it is counted below
    const float* device_logits = fb.logits;
    const int V = c.vocab_size;
    // Whether row k is alive (not pruned by streaming), refusing a row of an earlier forward.
    auto alive = [this, forward_id, rows = out.logit_rows](int k) {
      if (forwards != forward_id)
        throw std::logic_error("CudaContext: a logit row of an earlier forward was asked for after the next one");
      return alive_[size_t(rows[size_t(k)])] != 0;
    };
    out.rows_fetched_by(nr, [this, alive, device_logits, V](int k, float* dst) {
      if (!alive(k)) {
        std::fill_n(dst, V, std::numeric_limits<float>::quiet_NaN());
        return;
      }
      CUDA_CHECK(cudaMemcpyAsync(dst, device_logits + size_t(k) * size_t(V), sizeof(float) * size_t(V),
                                 cudaMemcpyDeviceToHost, stream_));
      CUDA_CHECK(cudaStreamSynchronize(stream_));
    });
    // What verification reads of a row is its processed distribution: made here (kernels/processed_rows.cu), only
    // the kept tokens cross. A pruned row, or one the kernel declines, is fetched whole instead.
    ProcessedRow* device_processed = processed_.get<ProcessedRow>(1);
    out.fetch_distribution = [this, alive, device_logits, device_processed, V](int k, const SamplingParams& sp,
                                                                               Distribution& d) {
      if (sp.greedy() || !alive(k)) return false;
      process_row(device_logits + size_t(k) * size_t(V), V, sp.temperature, sp.top_k, sp.top_p, sp.min_p,
                  device_processed, stream_);
      CUDA_CHECK(cudaMemcpyAsync(host_processed_.get(), device_processed, sizeof(ProcessedRow), cudaMemcpyDeviceToHost,
                                 stream_));
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      const ProcessedRow& r = *host_processed_;
      if (r.count < 0) return false;
      d.ids.assign(r.ids, r.ids + r.count);
      d.probs.assign(r.probs, r.probs + r.count);
      return true;
    };
  } else {
    out.logits.resize(size_t(nr) * c.vocab_size);
    timer_.mark("logits_to_host", stream_);
    CUDA_CHECK(cudaMemcpyAsync(out.logits.data(), fb.logits, sizeof(float) * out.logits.size(), cudaMemcpyDeviceToHost,
                               stream_));
  }
  for (size_t t = 0; t < b.taps.size(); ++t) {
    out.hiddens[t].resize(size_t(n) * H);
    CUDA_CHECK(cudaMemcpyAsync(out.hiddens[t].data(), fb.taps + t * size_t(n) * H, sizeof(float) * size_t(n) * H,
                               cudaMemcpyDeviceToHost, stream_));
  }
  if (n_streams_ > 0) finish_streams(*sr, out);
  if (c.moe()) {  // the routing of every layer: a few bytes a row, for the experts each layer ran
    host_ids_.resize(size_t(c.num_layers) * size_t(n) * size_t(c.experts_per_token));
    CUDA_CHECK(cudaMemcpyAsync(host_ids_.data(), fb.moe.ids, sizeof(int32_t) * host_ids_.size(), cudaMemcpyDeviceToHost,
                               stream_));
  }
  timer_.mark("end", stream_);
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  timer_.collect(n);
  if (c.moe()) count_experts(n);
  if (sr) mark_pruned(b, out);

  n_past_ += n;
  last_batch_start_ = base;
  last_batch_size_ = n;
  forwards += 1;
  forward_tokens += uint64_t(n);
}

void CudaContext::device_forward(const Batch& b, const ForwardBuffers& fb, const std::vector<int32_t>& pos) {
  const auto& c = model_->config();
  const int n = b.size(), nr = fb.logit_rows;
  const int H = c.hidden_size, hd = c.head_dim, nh = c.num_heads, nkv = c.num_kv_heads, base = n_past_;
  const StreamingRequest* sr = b.streaming ? &*b.streaming : nullptr;
  float* x = fb.x;
  timer_.mark("embed", stream_);
  embed_gather(dm_->embed.data, dm_->embed.type, fb.tokens, n, H, x, stream_);
  if (c.embed_scale != 1.f) scale(x, c.embed_scale, int64_t(n) * H, stream_);  // Gemma: sqrt(hidden); Granite
  // Taps go to device memory here (fb.taps, one [n][H] block per tap); the forward copies them to the host after.
  auto capture = [&](HiddenTap::Kind kind, int layer, const float* src) {
    for (size_t t = 0; t < b.taps.size(); ++t) {
      if (b.taps[t].kind != kind || (kind == HiddenTap::LayerInput && b.taps[t].layer != layer)) continue;
      CUDA_CHECK(cudaMemcpyAsync(fb.taps + t * size_t(n) * H, src, sizeof(float) * size_t(n) * H,
                                 cudaMemcpyDeviceToDevice, stream_));
    }
  };
  const uint8_t* mask = fb.mask;
  const int stream_start = sr ? c.num_layers - sr->msa_layers : c.num_layers;
  const int prune_layer = sr && !sr->parent_row.empty() ? sr->weights->config().prune_layer : -1;
  // Fused launches (fuse_) outside Speculative Streaming, whose streams and pruning act between a layer's residual
  // add and the next layer's norm, and keep pruned rows out of the cache: each layer ends by norming its output into
  // fb.h for the next (or for the final norm), and the keys and values go straight to their cache slots.
  const bool fused = fuse_ && !sr;
  // Fused: the q/k/v products' 16-bit input the previous layer's last norm wrote into fb.x16 (null: none, they convert
  // their own), decided once where it is written.
  const void* h16 = nullptr;
  for (int l = 0; l < c.num_layers; ++l) {
    const DeviceLayer& L = dm_->layers[l];
    if (sr && l == stream_start) begin_streams(*sr, b, x, pos);
    capture(HiddenTap::LayerInput, l, x);
    float* k = fused ? k_cache_[l] + size_t(base) * kv_dim_ : fb.k;
    float* v = fused ? v_cache_[l] + size_t(base) * kv_dim_ : fb.v;
    // After the first layer the previous one's last kernel normed x into fb.h (and into h16 where it wrote one).
    project_qkv(L, x, n, fb.h, fb.q, k, v, fused && l > 0, h16, fb.qkv);
    timer_.mark("rope+cache", stream_);
    position_qk(l, fb.q, k, n, fb.pos);
    if (!fused) write_cache(l, base, n, fb.k, fb.v);
    timer_.mark("attention", stream_);
    attention(fb.q, k_cache_[l], v_cache_[l], slot_pos_, mask, fb.pos, n, base, nh, nkv, hd, c.window_of(l),
              c.attn_soft_cap, fb.att, stream_, attention_scratch_, row_tiles_);
    const bool last = l + 1 == c.num_layers;
    const float* next_norm = !fused ? nullptr : last ? dm_->final_norm : dm_->layers[l + 1].input_norm;
    const DeviceLayer* next = last ? nullptr : &dm_->layers[l + 1];
    const WType next16 = fused && next ? premade_input_type({&next->wq, &next->wk, &next->wv}) : WType::F32;
    finish_layer(L, x, n, fb.att, LayerScratch{fb.h, fb.gate, fb.up, fused ? fb.x16 : nullptr, &fb.moe}, next_norm,
                 next16);
    h16 = next16 != WType::F32 ? fb.x16 : nullptr;
    if (n_streams_ > 0) stream_layer(l);
    if (l == prune_layer) mask = prune_rows(*sr, b, x);
  }
  if (!fused) rmsnorm(x, dm_->final_norm, fb.h, n, H, c.rms_norm_eps, stream_);
  capture(HiddenTap::FinalNorm, 0, fb.h);
  timer_.mark("lm_head", stream_);
  gather_rows(fb.h, fb.rows, nr, H, fb.sel, stream_);
  linear(fb.sel, nr, dm_->lm_head, nullptr, fb.logits);
  finish_logits(fb.logits, nr);
}

void CudaContext::finish_logits(float* logits, int rows) {
  const ModelConfig& c = model_->config();
  const int64_t n = int64_t(rows) * c.vocab_size;
  // Granite: logits / logits_scaling, as a multiplication by its inverse (as llama.cpp's graph; within an ulp of the
  // CPU's division).
  if (c.logit_scale != 1.f) scale(logits, 1.f / c.logit_scale, n, stream_);
  if (c.final_soft_cap > 0.f) soft_cap(logits, c.final_soft_cap, n, stream_);  // Gemma 2
}

void CudaContext::launch_as_graph(const GraphKey& key, const std::function<void()>& body) {
  // Whatever fails before the graph is launched leaves the forward's work undone: it runs op by op, now and from now
  // on (a capture invalidated without a throw, an instantiation refused, would otherwise fail every forward of the
  // shape).
  auto op_by_op = [&](const std::string& why) {
    cudaGetLastError();
    spdlog::warn("CUDA graphs off for this context: {}", why);
    use_graphs_ = false;
    body();
  };
  cudaGraph_t g = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  try {
    body();
  } catch (const std::exception& e) {
    // Something in the forward cannot be captured: end the capture, and run op by op from now on.
    cudaStreamEndCapture(stream_, &g);
    if (g) cudaGraphDestroy(g);
    return op_by_op(std::string("capturing a forward failed (") + e.what() + ")");
  }
  if (const cudaError_t ended = cudaStreamEndCapture(stream_, &g); ended != cudaSuccess || !g) {
    if (g) cudaGraphDestroy(g);
    return op_by_op(std::string("ending a capture failed (") + cudaGetErrorString(ended) + ")");
  }
  auto it = graphs_.find(key);
  if (it != graphs_.end()) {
    // The same shape as before: only kernel arguments (the cache length, pointers) differ, so the executable graph is
    // updated in place rather than instantiated again (which costs far more than the launches it saves).
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(it->second, g, &info) != cudaSuccess) {
      cudaGetLastError();
      CUDA_CHECK(cudaGraphExecDestroy(it->second));
      graphs_.erase(it);
      it = graphs_.end();
    }
  }
  if (it == graphs_.end()) {
    cudaGraphExec_t exec = nullptr;
    if (const cudaError_t made = cudaGraphInstantiate(&exec, g, 0); made != cudaSuccess) {
      cudaGraphDestroy(g);
      return op_by_op(std::string("instantiating a graph failed (") + cudaGetErrorString(made) + ")");
    }
    it = graphs_.emplace(key, exec).first;
  }
  CUDA_CHECK(cudaGraphDestroy(g));
  CUDA_CHECK(cudaGraphLaunch(it->second, stream_));
}

void CudaContext::project_qkv(const DeviceLayer& L, const float* x, int rows, float* h, float* q, float* k, float* v,
                              bool normed, const void* h16, float* qkv) {
  const auto& c = model_->config();
  timer_.mark("norms+adds", stream_);
  if (!normed) rmsnorm(x, L.input_norm, h, rows, c.hidden_size, c.rms_norm_eps, stream_);
  timer_.mark("qkv", stream_);
  if (qkv && L.wqkv.data) {
    linear_each(h, rows, {{&L.wqkv, L.bqkv, qkv}}, h16);
    split_qkv(qkv, rows, L.wq.rows, L.wk.rows, q, k, v, stream_);
  } else {
    linear_each(h, rows, {{&L.wq, L.bq, q}, {&L.wk, L.bk, k}, {&L.wv, L.bv, v}}, h16);
  }
  if (c.qk_norm) {  // in place, one block per head
    timer_.mark("norms+adds", stream_);
    rmsnorm(q, L.q_norm, q, rows * c.num_heads, c.head_dim, c.rms_norm_eps, stream_);
    rmsnorm(k, L.k_norm, k, rows * c.num_kv_heads, c.head_dim, c.rms_norm_eps, stream_);
  }
}

void CudaContext::position_qk(int l, float* q, float* k, int rows, const int32_t* positions) {
  const auto& c = model_->config();
  const float* inv_freq = dm_->inv_freq_of(c, l, n_ctx_);
  // Phi's partial rotary and LongRoPE's attention factor (the whole head and 1 for every other model).
  const int rotary = c.rotary_dims();
  const float rope_scale = rope_attention_factor(c, c.local_rope(l));
  if (!c.rope_in(l)) {
    // SmolLM3's NoPE layers: no rotation; the queries' scale below still applies.
  } else if (fuse_) {
    rope_qk(q, k, rows, c.num_heads, c.num_kv_heads, c.head_dim, positions, inv_freq, stream_, rotary, rope_scale);
  } else {
    rope(q, rows, c.num_heads, c.head_dim, positions, inv_freq, stream_, rotary, rope_scale);
    rope(k, rows, c.num_kv_heads, c.head_dim, positions, inv_freq, stream_, rotary, rope_scale);
  }
  const float q_scale = c.attention_scale() * std::sqrt(float(c.head_dim));
  if (q_scale != 1.f) scale(q, q_scale, int64_t(rows) * c.num_heads * c.head_dim, stream_);
}

void CudaContext::finish_layer(const DeviceLayer& L, float* x, int rows, const float* att, const LayerScratch& s,
                                const float* next_norm, WType next16) {
  const auto& c = model_->config();
  const int H = c.hidden_size, F = c.intermediate_size;
  timer_.mark("o_proj", stream_);
  linear(att, rows, L.wo, L.bo, s.h);
  timer_.mark("norms+adds", stream_);
  if (L.attn_out_norm) rmsnorm(s.h, L.attn_out_norm, s.h, rows, H, c.rms_norm_eps, stream_);
  if (c.residual_scale != 1.f) scale(s.h, c.residual_scale, int64_t(rows) * H, stream_);  // Granite
  // The gate/up products' 16-bit input, written by the norm before them (fused, 16-bit weights), and the down
  // product's, by silu_mul.
  const WType gu16 = s.x16 ? premade_input_type({&L.w_gate, &L.w_up}) : WType::F32;
  const WType down16 = s.x16 && !c.gelu() ? premade_input_type({&L.w_down}) : WType::F32;
  void* gu_in = gu16 != WType::F32 ? s.x16 : nullptr;
  void* down_in = down16 != WType::F32 ? s.x16 : nullptr;
  if (fuse_) {
    add_rmsnorm(s.h, x, L.post_attn_norm, s.h, rows, H, c.rms_norm_eps, stream_, gu_in, gu16);
  } else {
    add(s.h, x, int64_t(rows) * H, stream_);
    rmsnorm(x, L.post_attn_norm, s.h, rows, H, c.rms_norm_eps, stream_);
  }
  if (L.moe()) {
    moe_mlp(L, rows, s);
  } else {
    timer_.mark("gate_up", stream_);
    linear_each(s.h, rows, {{&L.w_gate, L.b_gate, s.gate}, {&L.w_up, L.b_up, s.up}}, gu_in);
    timer_.mark("norms+adds", stream_);
    gated_activation(s.gate, s.up, int64_t(rows) * F, down_in, down16);
    timer_.mark("down", stream_);
    linear_each(s.gate, rows, {{&L.w_down, L.b_down, s.h}}, down_in);
  }
  timer_.mark("norms+adds", stream_);
  if (L.ffn_out_norm) rmsnorm(s.h, L.ffn_out_norm, s.h, rows, H, c.rms_norm_eps, stream_);
  if (c.residual_scale != 1.f) scale(s.h, c.residual_scale, int64_t(rows) * H, stream_);  // Granite
  if (next_norm)
    add_rmsnorm(s.h, x, next_norm, s.h, rows, H, c.rms_norm_eps, stream_, next16 != WType::F32 ? s.x16 : nullptr,
                next16);
  else
    add(s.h, x, int64_t(rows) * H, stream_);
}

void CudaContext::gated_activation(float* gate, const float* up, int64_t n, void* out16, WType t16) {
  if (model_->config().gelu())
    gelu_tanh_mul(gate, up, gate, n, stream_);  // (no 16-bit copy: down16 is F32 for GELU models)
  else
    silu_mul(gate, up, gate, n, stream_, out16, t16);
}

void CudaContext::keep(std::span<const int> rows) {
  check_keep_rows(rows, last_batch_start_, last_batch_size_);
  const int base = last_batch_start_;
  std::vector<int32_t> host_pos(last_batch_size_);
  CUDA_CHECK(cudaMemcpy(host_pos.data(), slot_pos_ + base, sizeof(int32_t) * last_batch_size_, cudaMemcpyDeviceToHost));
  for (size_t r = 0; r < rows.size(); ++r) {
    const int src_row = rows[r];
    const int dst = base + int(r), src = base + src_row;
    if (dst == src) continue;
    // Rows only move towards lower slots, in increasing order, so no copy overwrites a source still needed.
    for (size_t l = 0; l < k_cache_.size(); ++l) {
      CUDA_CHECK(cudaMemcpyAsync(k_cache_[l] + size_t(dst) * kv_dim_, k_cache_[l] + size_t(src) * kv_dim_,
                                 sizeof(float) * kv_dim_, cudaMemcpyDeviceToDevice, stream_));
      CUDA_CHECK(cudaMemcpyAsync(v_cache_[l] + size_t(dst) * kv_dim_, v_cache_[l] + size_t(src) * kv_dim_,
                                 sizeof(float) * kv_dim_, cudaMemcpyDeviceToDevice, stream_));
    }
    CUDA_CHECK(cudaMemcpyAsync(slot_pos_ + dst, &host_pos[src_row], sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  n_past_ = base + int(rows.size());
  last_batch_start_ = -1;
}

bool device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return false;
  }
  return count > 0;
}

std::string device_description() {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return "no CUDA device";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s, sm_%d%d, %.1f GiB", p.name, p.major, p.minor,
                double(p.totalGlobalMem) / double(1ull << 30));
  return buf;
}

std::unique_ptr<Context> new_cuda_context(std::shared_ptr<const Model> model, int n_ctx) {
  return std::make_unique<CudaContext>(std::move(model), n_ctx);
}

}  // namespace specscope::cuda
