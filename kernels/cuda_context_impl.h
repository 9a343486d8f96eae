#pragma once
// The CUDA Context's class (kernels/cuda_context.h has its public face), shared by the files that implement it:
// cuda_context.cpp (the Llama forward, keep, the products) and cuda_streaming.cpp (Speculative Streaming's pruning
// and streams inside the forward), as the CPU backend splits cpu_context.cpp and cpu_streaming.cpp. Nothing outside
// kernels/ includes this.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <compare>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/model/forward.h"
#include "kernels/cuda_check.h"
#include "kernels/device_model.h"
#include "kernels/env_flag.h"
#include "kernels/op_timer.h"
#include "kernels/processed_row.h"

namespace specscope {
class Model;
}

namespace specscope::cuda {

// A device buffer that grows to the largest size asked for. Growing frees the old memory, so a forward asks each
// buffer for its size once and keeps the pointer.
struct Buffer {
  void* p = nullptr;
  size_t bytes = 0;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (p) cudaFree(p);
  }
  template <class T>
  T* get(size_t count) {
    const size_t need = count * sizeof(T);
    if (need > bytes) {
      if (p) CUDA_CHECK(cudaFree(p));
      p = nullptr;  // a failed cudaMalloc below must not leave the freed pointer to be handed out again
      bytes = 0;
      CUDA_CHECK(cudaMalloc(&p, need));
      bytes = need;
    }
    return static_cast<T*>(p);
  }
};

class CudaContext final : public Context {
 public:
  CudaContext(std::shared_ptr<const Model> model, int n_ctx);
  ~CudaContext() override;

  void forward(const Batch& b, ForwardOutput& out) override;
  void keep(std::span<const int> rows) override;
  void truncate(int n_past) override {
    if (n_past < 0 || n_past > n_past_) throw std::out_of_range("truncate(): beyond the cache");
    n_past_ = n_past;
    last_batch_start_ = -1;
  }
  int n_past() const override { return n_past_; }
  int n_ctx() const override { return n_ctx_; }
  std::string backend_name() const override { return "cuda"; }

 private:
  // Y[n, m] = X[n, k] W^T (+ bias), X and Y f32 on the device: cuBLAS, or gemv.cu in groups of kGemvMaxRows rows
  // when SPECSCOPE_CUDA_GEMV=1; GGUF blocks dequantized in panels for cuBLAS.
  void linear(const float* X, int n, const DeviceMatrix& W, const float* bias, float* Y);
  // The last steps of the logits of `rows` rows after the lm_head, as engine/model/final_logits.h's finish_logits
  // does them on the CPU: Granite's logits / logits_scaling, Gemma 2's final soft cap.
  void finish_logits(float* logits, int rows);
  // The products' input in W's type: X itself for f32 and block weights, else a 16-bit copy in half_ (to_half).
  const void* product_input(const float* X, int n, const DeviceMatrix& W);
  // linear()'s product from an input product_input() made (X: the f32 input it was made from, for block weights).
  void product(const float* X, const void* x, int n, const DeviceMatrix& W, const float* bias, float* Y);
  // linear() of each (W, bias, Y) over one input, converted once when fusing (the q/k/v and gate/up products).
  struct Output {
    const DeviceMatrix* W;
    const float* bias;
    float* Y;
  };
  // x16 (not null): X's 16-bit copy, already made in every output's weight type (a fused kernel wrote it).
  void linear_each(const float* X, int n, std::initializer_list<Output> outs, const void* x16 = nullptr);
  // The 16-bit type the products of these matrices all take their input in (F16 or BF16) when fusing, else F32:
  // a kernel before them then writes that input beside its f32 output (LayerScratch::x16), saving to_half's launch.
  WType premade_input_type(std::initializer_list<const DeviceMatrix*> ms) const;
  // A mixture-of-experts layer's scratch for `rows` rows (kernels/cuda_experts.cpp).
  struct ExpertScratch {
    float* router = nullptr;                 // rows x num_experts: the router's logits, then their softmax
    int32_t* ids = nullptr;                  // per layer, rows x experts_per_token: each row's experts, in order
    float* weights = nullptr;                // rows x experts_per_token: what each expert's output is multiplied by
    float *gate = nullptr, *up = nullptr;    // rows * experts_per_token x expert_ffn
    float* outs = nullptr;                   // rows * experts_per_token x H: each chosen expert's output
    float *shared_gate = nullptr, *shared_up = nullptr;  // rows x shared_expert_ffn (Qwen2-MoE)
    float *shared_out = nullptr, *shared_scales = nullptr;  // rows x H, rows
    // rows > 1: where a layer's picks are grouped by expert (group_expert_picks' order and groups)
    int32_t* order = nullptr;
    ExpertGroup* groups = nullptr;
    int group_bound = 0;
  };
  // The buffers behind one ExpertScratch (the main rows' and the streams' are separate).
  struct ExpertBuffers {
    Buffer router, ids, weights, gate, up, outs, shared_gate, shared_up, shared_out, shared_scales, order, groups;
    ExpertScratch take(const ModelConfig& c, int rows);
  };
  // One forward's device buffers, taken before any device work (growing a buffer frees its memory).
  struct ForwardBuffers {
    int32_t *tokens = nullptr, *pos = nullptr, *rows = nullptr;  // tokens, positions, logit rows
    const uint8_t* mask = nullptr;                               // the batch's mask (null: causal)
    float *x = nullptr, *h = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *att = nullptr;
    float* qkv = nullptr;  // one q/k/v product's output (DeviceLayer::wqkv), when the model has one
    float *gate = nullptr, *up = nullptr, *sel = nullptr, *logits = nullptr;
    void* x16 = nullptr;    // fused: a product's 16-bit input, rows x max(H, F) (LayerScratch::x16)
    float* taps = nullptr;  // [taps][n][H]
    int logit_rows = 0;     // rows whose logits the forward computes (fb.rows holds them)
    ExpertScratch moe;      // a mixture of experts' (else all null)
  };
  // The device work of a forward, from the embedding to the logits on the device: nothing in it waits for the host
  // (except Speculative Streaming's pruning), so without streaming it can be captured as a CUDA graph.
  void device_forward(const Batch& b, const ForwardBuffers& fb, const std::vector<int32_t>& pos);
  // Batches of one shape (rows, logit rows, mask or causal, taps) share one executable graph.
  struct GraphKey {
    int n = 0, logit_rows = 0, masked = 0;
    std::vector<int> taps;  // per tap: its layer, -1 for the final norm
    auto operator<=>(const GraphKey&) const = default;
  };
  // Captures body() on the stream, updates (or instantiates) the shape's executable graph and launches it; if the
  // capture fails, turns graphs off for this context and runs body() op by op.
  void launch_as_graph(const GraphKey& key, const std::function<void()>& body);
  // Layer l's cache slots base.. for the batch's alive rows (all of them outside Speculative Streaming's pruning).
  void write_cache(int l, int base, int n, const float* k, const float* v);
  // Before attention, for the main rows and the streams alike: the input norm into h, the q/k/v projections, and
  // Qwen3's per-head norms of q and k (RoPE is the caller's: the rows' positions differ).
  // normed: h already holds the input norm of x (the previous layer's fused residual add made it).
  // h16: h's 16-bit copy in the q/k/v weights' type, made with it (premade_input_type), or null.
  // qkv: rows x (q_dim + 2 kv_dim) floats for one product when the layer has a stacked wqkv, copied apart into q, k
  // and v after it (split_qkv); null: three products.
  void project_qkv(const DeviceLayer& L, const float* x, int rows, float* h, float* q, float* k, float* v,
                   bool normed = false, const void* h16 = nullptr, float* qkv = nullptr);
  // RoPE of layer l's q and k rows at `positions` (Gemma 3's sliding layers with their own theta), and the queries
  // scaled by the model's attention scale over attention()'s 1/sqrt(head_dim) where the two differ (Gemma 3 27B).
  void position_qk(int l, float* q, float* k, int rows, const int32_t* positions);
  // A decoder layer's scratch for `rows` rows: the normed input, and the MLP's gate and up halves.
  struct LayerScratch {
    float *h = nullptr, *gate = nullptr, *up = nullptr;
    // Room for one product's 16-bit input of `rows` rows (fused: the norms and silu_mul write it beside their f32
    // output); null: every product converts its own input.
    void* x16 = nullptr;
    const ExpertScratch* moe = nullptr;  // a mixture of experts' layers' scratch for the same rows
  };
  // Once `att` holds the attention output of `rows` rows: the output projection, the MLP and both residual adds
  // into x (the main rows and the streams alike), each sublayer's output normed before its add where the model
  // has those norms (Gemma 3).
  // next_norm (fusing): the last residual add also norms x with it into s.h (the next layer's input norm, or the
  // final norm after the last layer), and into s.x16 in next16's type unless that is F32 (the next layer's q/k/v
  // input, premade_input_type).
  void finish_layer(const DeviceLayer& L, float* x, int rows, const float* att, const LayerScratch& s,
                    const float* next_norm = nullptr, WType next16 = WType::F32);
  // gate = act(gate) * up over n elements: SiLU, or Gemma's tanh GELU (ModelConfig::gelu); out16 as silu_mul's.
  void gated_activation(float* gate, const float* up, int64_t n, void* out16 = nullptr, WType t16 = WType::BF16);
  // A mixture-of-experts layer's MLP (kernels/cuda_experts.cpp): s.h holds the `rows` normed inputs, and the experts'
  // weighted sum (and Qwen2-MoE's gated shared expert) replaces them. The routing stays on the device, in s.moe->ids'
  // slice for this layer.
  void moe_mlp(const DeviceLayer& L, int rows, const LayerScratch& s);
  // After a forward of n rows has synced: experts_computed grows by the experts its expert layers ran (host_ids_).
  void count_experts(int n);
  std::vector<int32_t> host_ids_;  // the main rows' routing of every layer, copied back for count_experts

  // Speculative Streaming (cuda_streaming.cpp; the same rows as the CPU backend's, engine/model/streaming_rows.h).
  // After the pruning adapter's layer: decides which rows survive (alive_) and returns the mask the later layers
  // use (pruned rows no longer visible to any row).
  const uint8_t* prune_rows(const StreamingRequest& sr, const Batch& b, const float* x);
  // The request's streaming tensors on the GPU (uploaded when a new set is asked for).
  const DeviceStreaming& streaming_tensors(const StreamingRequest& sr);
  // At the first multi-stream layer: the streams' residual states from their rows' states in x.
  void begin_streams(const StreamingRequest& sr, const Batch& b, const float* x, const std::vector<int32_t>& pos);
  // In each multi-stream layer, after the main rows' layer: the streams through the same layer.
  void stream_layer(int l);
  // After the last layer: the streams' final-normed states, copied to out (asynchronously; the forward syncs).
  void finish_streams(const StreamingRequest& sr, ForwardOutput& out);
  // After the forward's sync: what the CPU backend gives pruned rows (NaN logits, zero taps after pruning).
  void mark_pruned(const Batch& b, ForwardOutput& out) const;

  std::shared_ptr<const Model> model_;
  std::shared_ptr<const DeviceModel> dm_;
  // SPECSCOPE_CUDA_GEMV=1 sends every product of 16-bit or f32 weights to gemv.cu, in groups of kGemvMaxRows rows
  // (and since the forty-eighth session, never run on a GPU, those of GGUF block weights to its block_gemv):
  // one product path for every batch size, and each row's sums independent of its batch. On the H200 gemv.cu gave
  // 3.1 TB/s on the 8B FFN's matrices and the shipped base 1,240 tok/s against cuBLAS's 714-771 (launch-bound),
  // but a tree of 64 rows reads the weights 8 times, and with gemv.cu on up to 8 rows only (cuBLAS beyond), greedy
  // trees matched vanilla on 75 of 80 held-out prompts, 80 of 80 with cuBLAS alone (bench/results/
  // gpu_h200_2026-11-28b and c). Off by default until the every-size mode is measured on a GPU.
  const bool use_gemv_ = env_flag("SPECSCOPE_CUDA_GEMV", false);
  // SPECSCOPE_CUDA_GRAPHS=1: each forward's device work as one CUDA graph (captured every step and updated in place:
  // the shipped base's forward is ~120 launches, and on the H200 it ran launch-bound at ~750 tok/s). Off by default
  // until it is measured on a GPU.
  bool use_graphs_ = env_flag("SPECSCOPE_CUDA_GRAPHS", false);
  // SPECSCOPE_CUDA_FUSE=0 turns off the fused launches (the same results bit for bit, fewer launches): each residual
  // add with the norm after it (add_rmsnorm), RoPE of q and k in one launch, one 16-bit copy of the input for the
  // q/k/v and gate/up products, and outside Speculative Streaming the keys and values written by their products
  // straight into the cache slots instead of copied there. For measuring the fusions against the launches they save.
  const bool fuse_ = env_flag("SPECSCOPE_CUDA_FUSE", true);
  // SPECSCOPE_CUDA_SUMMARY_CHUNKS=0: greedy verification's logit summaries one block a row instead of in chunks
  // (logit_summaries_chunked). One block scanned a 128,256-entry row in 0.86 ms of an 8 ms 8B decode step on the
  // H200; in chunks decode went from 142 to 162 tok/s in the same run (bench/results/gpu_h200_2026-12-04c).
  const bool summary_chunks_ = env_flag("SPECSCOPE_CUDA_SUMMARY_CHUNKS", true);
  // SPECSCOPE_CUDA_ROW_TILES=0: attention of 4 rows or more one block per row (the split or single-block path)
  // instead of in tiles of rows sharing each key and value row loaded (attention_rows.cu). For measuring the tiles
  // against the paths they replace.
  const bool row_tiles_ = env_flag("SPECSCOPE_CUDA_ROW_TILES", true);
  static constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;
  void* blas_workspace_ = nullptr;
  std::set<GraphKey> warm_shapes_;                 // shapes that have run once op by op (their buffers are grown)
  std::map<GraphKey, cudaGraphExec_t> graphs_;     // one executable graph per shape
  OpTimer timer_{env_flag("SPECSCOPE_CUDA_PROFILE", false)};
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  int n_ctx_ = 0, n_past_ = 0, kv_dim_ = 0;
  int last_batch_start_ = -1, last_batch_size_ = 0;
  std::vector<float*> k_cache_, v_cache_;
  int32_t* slot_pos_ = nullptr;
  // The chunked attention's partials (llama_kernels.h: a capture must not allocate), attention_scratch_floats for
  // n_ctx slots.
  AttentionScratch attention_scratch_;
  Buffer x_, h_, q_, k_, v_, qkv_, att_, gate_, up_, half_, x16_, panel_, tokens_, pos_, mask_, rows_, sel_, logits_, taps_;
  Buffer summaries_, probe_start_, probe_tokens_, probe_probs_;  // Batch::summaries_only (kernels/sampling.cu)
  Buffer summary_parts_;  // logit_summaries_chunked's per-chunk parts
  Buffer processed_;  // Batch::rows_on_demand: a row's processed distribution (kernels/processed_rows.cu)
  std::unique_ptr<ProcessedRow> host_processed_ = std::make_unique<ProcessedRow>();

  // Speculative Streaming state of the current forward.
  std::unique_ptr<DeviceStreaming> ds_;  // the streaming tensors last asked for
  int batch_n_ = 0, batch_base_ = 0;
  std::vector<uint8_t> alive_;      // per batch row: not pruned
  std::vector<uint8_t> host_mask_;  // the batch's mask after pruning (n x n)
  std::vector<int> stream_src_;     // the rows that got streams, as batch rows
  int n_streams_ = 0;               // stream rows: sources x streams, source by source
  // The stream rows' attention reuses the batch attention kernel over an extended batch: the n main rows (their
  // queries zero, their outputs unused) then the stream rows, with the cache and the batch's keys/values copied
  // and the streams' own appended after them, and a mask that gives each stream its row's keys and its lower
  // streams'. Pointers into the buffers below, taken once per forward by begin_streams.
  struct StreamBuffers {
    float *xs = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *att = nullptr;
    LayerScratch scratch;
    int32_t *slot_pos = nullptr, *positions = nullptr;
    uint8_t* mask = nullptr;
  } sb_;
  Buffer xs_, s_h_, s_gate_, s_up_, ext_q_, ext_k_, ext_v_, ext_att_, ext_slot_pos_, ext_pos_, ext_mask_, s_rows_;
  Buffer p_rows_, p_e_, p_t_, p_u_, p_logits_;
  ExpertBuffers moe_buffers_, stream_moe_buffers_;  // the main rows', the streams'
  ExpertScratch stream_moe_;
};

}  // namespace specscope::cuda
