#pragma once
// A model's weights on the GPU, uploaded once and shared by every CUDA context of that model (compare lanes,
// drafts): matrices in their stored type (f32, f16 or bf16), norms and biases in f32, RoPE frequencies.
#include <memory>
#include <vector>

#include "kernels/llama_kernels.h"

namespace specscope {
class Model;
struct TensorView;
}  // namespace specscope

namespace specscope::cuda {

struct DeviceMatrix {
  const void* data = nullptr;  // [rows, cols] row-major (PyTorch Linear layout)
  WType type = WType::F32;
  int rows = 0, cols = 0;
};

struct DeviceLayer {
  const float *input_norm = nullptr, *post_attn_norm = nullptr;
  DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;
  const float *b_gate = nullptr, *b_up = nullptr, *b_down = nullptr;
};

class DeviceModel {
 public:
  // The device copy of `model`, uploading it on first use (thread-safe; freed with the last user).
  static std::shared_ptr<const DeviceModel> of(const Model& model);
  ~DeviceModel();

  DeviceMatrix embed, lm_head;
  std::vector<DeviceLayer> layers;
  const float* final_norm = nullptr;
  const float* inv_freq = nullptr;
  size_t bytes = 0;  // device memory held

 private:
  std::vector<void*> allocations_;
  const void* upload(const void* host, size_t bytes);
  DeviceMatrix matrix(const TensorView& t);
  const float* vector(const std::vector<float>& v);
};

}  // namespace specscope::cuda
