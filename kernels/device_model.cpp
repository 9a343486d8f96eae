#include "kernels/device_model.h"

#include <spdlog/spdlog.h>

#include <map>
#include <mutex>

#include "engine/heads/streaming_weights.h"
#include "engine/model/model.h"
#include "engine/util/error.h"
#include "kernels/cuda_check.h"
#include "kernels/env_flag.h"

namespace specscope::cuda {

namespace {
std::mutex g_mutex;
std::map<const Model*, std::weak_ptr<const DeviceModel>> g_cache;

bool can_stack(std::initializer_list<const TensorView*> ts) {
  const TensorView& first = **ts.begin();
  if (first.dtype != DType::F32 && first.dtype != DType::F16 && first.dtype != DType::BF16) return false;
  for (const TensorView* t : ts)
    if (t->dtype != first.dtype || t->cols() != first.cols() || !t->data) return false;
  return true;
}

// Rows [r0, r0 + rows) of a 16-bit or f32 matrix, in place.
DeviceMatrix rows_of(const DeviceMatrix& m, int r0, int rows) {
  DeviceMatrix v = m;
  v.rows = rows;
  v.data = static_cast<const char*>(m.data) + size_t(r0) * size_t(m.cols) * dense_element_bytes(m.type);
  return v;
}

// The stored type of a weight on the GPU (GGUF blocks stay blocks: linear() dequantizes panels of rows for cuBLAS).
WType wtype_of(const TensorView& t) {
  switch (t.dtype) {
    case DType::F32: return WType::F32;
    case DType::F16: return WType::F16;
    case DType::BF16: return WType::BF16;
    case DType::Q8_0: return WType::Q8_0;
    case DType::Q4_0: return WType::Q4_0;
    case DType::Q4_1: return WType::Q4_1;
    case DType::Q5_0: return WType::Q5_0;
    case DType::Q5_1: return WType::Q5_1;
    case DType::Q4_K: return WType::Q4_K;
    case DType::Q5_K: return WType::Q5_K;
    case DType::Q6_K: return WType::Q6_K;
    default: throw InputError(t.name, "the CUDA backend takes f32, f16, bf16 or GGUF block weights, not " +
                                          std::string(dtype_name(t.dtype)));
  }
}
}  // namespace

const void* DeviceUploads::upload(const void* host, size_t n) {
  void* d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, n));
  allocations_.push_back(d);
  CUDA_CHECK(cudaMemcpy(d, host, n, cudaMemcpyHostToDevice));
  bytes += n;
  return d;
}

DeviceMatrix DeviceUploads::matrix(const TensorView& t) {
  DeviceMatrix m;
  m.rows = int(t.rows());
  m.cols = int(t.cols());
  m.type = wtype_of(t);
  m.data = upload(t.data, t.nbytes());
  return m;
}

DeviceMatrix DeviceUploads::stacked(const std::vector<const TensorView*>& ts) {
  DeviceMatrix m = {nullptr, WType::F32, 0, int((*ts.begin())->cols())};
  std::vector<char> host;
  for (const TensorView* t : ts) {
    m.rows += int(t->rows());
    const char* p = static_cast<const char*>(t->data);
    host.insert(host.end(), p, p + t->nbytes());
  }
  m.type = wtype_of(*ts.front());
  m.data = upload(host.data(), host.size());
  return m;
}

const float* DeviceUploads::vector(const std::vector<float>& v) {
  if (v.empty()) return nullptr;
  return static_cast<const float*>(upload(v.data(), v.size() * sizeof(float)));
}

std::shared_ptr<const DeviceModel> DeviceModel::of(const Model& model) {
  std::lock_guard lock(g_mutex);
  if (auto it = g_cache.find(&model); it != g_cache.end())
    if (auto p = it->second.lock()) return p;
  auto dm = std::shared_ptr<DeviceModel>(new DeviceModel);
  const auto& w = model.weights();
  const auto& c = model.config();
  dm->embed = dm->matrix(w.embed);
  // A tied LM head is the embedding itself: share the device copy.
  dm->lm_head = w.lm_head.data == w.embed.data ? dm->embed : dm->matrix(w.lm_head);
  // SPECSCOPE_CUDA_QKV_ONE_PRODUCT=1: one q/k/v product per layer (DeviceLayer::wqkv). Opt-in until measured on a
  // GPU: cuBLAS may sum a wider product in another order, so its bits need not be the three products'.
  const bool one_qkv = env_flag("SPECSCOPE_CUDA_QKV_ONE_PRODUCT", false);
  for (const auto& L : w.layers) {
    DeviceLayer d;
    d.input_norm = dm->vector(L.input_norm);
    d.post_attn_norm = dm->vector(L.post_attn_norm);
    const bool biases = !L.bq.empty() && !L.bk.empty() && !L.bv.empty();
    const bool no_biases = L.bq.empty() && L.bk.empty() && L.bv.empty();
    if (one_qkv && can_stack({&L.wq, &L.wk, &L.wv}) && (biases || no_biases)) {
      d.wqkv = dm->stacked({&L.wq, &L.wk, &L.wv});
      const int q = int(L.wq.rows()), kv = int(L.wk.rows());
      d.wq = rows_of(d.wqkv, 0, q), d.wk = rows_of(d.wqkv, q, kv), d.wv = rows_of(d.wqkv, q + kv, int(L.wv.rows()));
      if (biases) {
        std::vector<float> b(L.bq);
        b.insert(b.end(), L.bk.begin(), L.bk.end());
        b.insert(b.end(), L.bv.begin(), L.bv.end());
        d.bqkv = dm->vector(b);
        d.bq = d.bqkv, d.bk = d.bqkv + q, d.bv = d.bqkv + q + kv;
      }
    } else {
      d.wq = dm->matrix(L.wq), d.wk = dm->matrix(L.wk), d.wv = dm->matrix(L.wv);
      d.bq = dm->vector(L.bq), d.bk = dm->vector(L.bk), d.bv = dm->vector(L.bv);
    }
    d.wo = dm->matrix(L.wo);
    if (L.experts.empty())
      d.w_gate = dm->matrix(L.w_gate), d.w_up = dm->matrix(L.w_up), d.w_down = dm->matrix(L.w_down);
    else
      dm->bind_experts(L, d);
    d.bo = dm->vector(L.bo);
    d.q_norm = dm->vector(L.q_norm), d.k_norm = dm->vector(L.k_norm);
    d.attn_out_norm = dm->vector(L.attn_out_norm), d.ffn_out_norm = dm->vector(L.ffn_out_norm);
    d.b_gate = dm->vector(L.b_gate), d.b_up = dm->vector(L.b_up), d.b_down = dm->vector(L.b_down);
    dm->layers.push_back(d);
  }
  dm->final_norm = dm->vector(w.final_norm);
  dm->inv_freq = dm->vector(rope_inv_freq(c));
  if (c.rope_local_theta > 0.f) dm->inv_freq_local = dm->vector(rope_inv_freq(c, /*local=*/true));
  if (c.rope_scaling.type == "longrope")
    dm->inv_freq_long =
        dm->vector(rope_inv_freq(c, /*local=*/false, c.rope_scaling.original_max_position_embeddings + 1));
  spdlog::info("uploaded {} to the GPU: {:.1f} MiB", model.path(), double(dm->bytes) / (1 << 20));
  g_cache[&model] = dm;
  return dm;
}

void DeviceModel::bind_experts(const LayerWeights& L, DeviceLayer& d) {
  d.router = matrix(L.router);
  d.experts.count = int(L.experts.size());
  // Each matrix of every expert in one upload: expert e's begins e matrices in (experts.cu's stride).
  auto stack = [&](TensorView ExpertWeights::* part) {
    std::vector<const TensorView*> ts;
    for (const ExpertWeights& e : L.experts) {
      const TensorView& t = e.*part;
      const TensorView& first = L.experts.front().*part;
      if (t.dtype != first.dtype || t.rows() != first.rows() || t.cols() != first.cols())
        throw InputError(t.name, "the CUDA backend stacks a layer's experts, which need one type and shape (" +
                                     std::string(first.name) + " differs)");
      ts.push_back(&t);
    }
    DeviceMatrix m = stacked(ts);
    m.rows = int(ts.front()->rows());  // one expert's shape; stacked() counted all of them
    return m;
  };
  d.experts.gate = stack(&ExpertWeights::gate);
  d.experts.up = stack(&ExpertWeights::up);
  d.experts.down = stack(&ExpertWeights::down);
  if (L.has_shared_expert()) {
    d.shared_gate = matrix(L.shared_expert.gate);
    d.shared_up = matrix(L.shared_expert.up);
    d.shared_down = matrix(L.shared_expert.down);
    d.shared_expert_gate = vector(L.shared_expert_gate);
  }
}

DeviceUploads::~DeviceUploads() {
  for (void* p : allocations_) cudaFree(p);
}

bool DeviceStreaming::copies(const StreamingWeights& w) const {
  return source == &w && source_data == w.stream_down.data;
}

DeviceStreaming::DeviceStreaming(const StreamingWeights& w) : source(&w), source_data(w.stream_down.data) {
  stream_down = matrix(w.stream_down);
  stream_up = matrix(w.stream_up);
  prune_down = matrix(w.prune_down);
  prune_up = matrix(w.prune_up);
  embeddings = vector(w.embeddings);
}

}  // namespace specscope::cuda
