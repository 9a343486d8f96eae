#pragma once
// A model's weights on the GPU, uploaded once and shared by every CUDA context of that model (compare lanes,
// drafts): matrices in their stored type (f32, f16, bf16 or GGUF blocks), norms and biases in f32, RoPE
// frequencies; and Speculative Streaming's extra tensors.
#include <initializer_list>
#include <memory>
#include <vector>

#include "engine/model/config.h"
#include "kernels/llama_kernels.h"

namespace specscope {
class Model;
struct LayerWeights;
class StreamingWeights;
struct TensorView;
}  // namespace specscope

namespace specscope::cuda {

struct DeviceMatrix {
  const void* data = nullptr;  // [rows, cols] row-major (PyTorch Linear layout)
  WType type = WType::F32;
  int rows = 0, cols = 0;
};

// A mixture-of-experts layer's experts on the GPU: each of their gate, up and down matrices stacked in one upload,
// expert e's at data + e * rows * row_bytes(type, cols) (wtype.h) (kernels/experts.cu picks the expert by the routing's
// ids on the device).
struct DeviceExperts {
  DeviceMatrix gate, up, down;  // one expert's shape; data: expert 0's
  int count = 0;
};

struct DeviceLayer {
  const float *input_norm = nullptr, *post_attn_norm = nullptr;
  DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
  // With SPECSCOPE_CUDA_QKV_ONE_PRODUCT=1 at upload: wq, wk and wv stacked into one matrix (wq/wk/wv are then views of
  // its rows, and bq/bk/bv of bqkv), so that decoding reads them in one product instead of three; data null
  // otherwise, or where they cannot stack (GGUF blocks, different types, biases on some only).
  DeviceMatrix wqkv;
  const float* bqkv = nullptr;
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;
  const float *q_norm = nullptr, *k_norm = nullptr;  // Qwen3's and Gemma 3's per-head norms (head_dim each), else null
  const float *attn_out_norm = nullptr, *ffn_out_norm = nullptr;  // Gemma 3's sublayer output norms, else null
  const float *b_gate = nullptr, *b_up = nullptr, *b_down = nullptr;
  // A mixture-of-experts layer (LayerWeights::router) has these instead of w_gate, w_up and w_down (whose data is then
  // null): the router [num_experts, H], the experts, and Qwen2-MoE's shared expert with its gate row (null if none).
  DeviceMatrix router;
  DeviceExperts experts;
  DeviceMatrix shared_gate, shared_up, shared_down;
  const float* shared_expert_gate = nullptr;
  bool moe() const { return experts.count > 0; }
};

// Device memory uploaded once and freed together: the base of the device copies below.
class DeviceUploads {
 public:
  DeviceUploads() = default;
  DeviceUploads(const DeviceUploads&) = delete;
  DeviceUploads& operator=(const DeviceUploads&) = delete;
  ~DeviceUploads();
  size_t bytes = 0;  // device memory held

 protected:
  const void* upload(const void* host, size_t bytes);
  DeviceMatrix matrix(const TensorView& t);
  // The matrices' rows one after another in one upload (same type and width: the caller checks).
  DeviceMatrix stacked(const std::vector<const TensorView*>& ts);
  const float* vector(const std::vector<float>& v);

 private:
  std::vector<void*> allocations_;
};

class DeviceModel : public DeviceUploads {
 public:
  // The device copy of `model`, uploading it on first use (thread-safe; freed with the last user).
  static std::shared_ptr<const DeviceModel> of(const Model& model);

  DeviceMatrix embed, lm_head;
  std::vector<DeviceLayer> layers;
  const float* final_norm = nullptr;
  const float* inv_freq = nullptr;
  const float* inv_freq_local = nullptr;  // Gemma 3's sliding layers' (ModelConfig::local_rope), else null
  // LongRoPE's frequencies for a context past the original length (rope_inv_freq's choice; inv_freq then holds
  // the short ones); null for every other model.
  const float* inv_freq_long = nullptr;
  // A mixture-of-experts layer's router, experts and shared expert into d.
  void bind_experts(const LayerWeights& L, DeviceLayer& d);
  // The RoPE frequencies layer l uses in a context of n_ctx positions.
  const float* inv_freq_of(const ModelConfig& c, int l, int n_ctx) const {
    if (c.local_rope(l)) return inv_freq_local;
    return inv_freq_long && takes_long_rope_factors(c, n_ctx) ? inv_freq_long : inv_freq;
  }
};

// Speculative Streaming's tensors (engine/heads/streaming_weights.h) on the GPU: a few MB, so each CUDA context
// uploads its own copy of the set it is asked to run (kernels/cuda_streaming.cpp).
class DeviceStreaming : public DeviceUploads {
 public:
  explicit DeviceStreaming(const StreamingWeights& w);
  const StreamingWeights* source = nullptr;  // the host set this copies
  const void* source_data = nullptr;         // ... and its tensors' data then (a new set may reuse the address)
  // Whether this copy is of `w` as it is now.
  bool copies(const StreamingWeights& w) const;
  DeviceMatrix stream_down, stream_up, prune_down, prune_up;
  const float* embeddings = nullptr;  // [num_streams, H]
};

}  // namespace specscope::cuda
