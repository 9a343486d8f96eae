#pragma once
// The tensors of a Llama-family decoder. Matrices are views into the memory-mapped safetensors files, kept
// in their stored type; the small vectors (norm weights, biases) are copied to f32 once at load time.
#include <vector>

#include "engine/util/tensor.h"

namespace specscope {

struct LayerWeights {
  std::vector<float> input_norm, post_attn_norm;  // [H]
  TensorView wq, wk, wv, wo;                      // [out, in], PyTorch Linear layout
  std::vector<float> bq, bk, bv, bo;              // empty when the layer has no bias
  TensorView w_gate, w_up, w_down;
  std::vector<float> b_gate, b_up, b_down;
};

struct ModelWeights {
  TensorView embed;  // [V, H]
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;  // [H]
  TensorView lm_head;             // [V, H]; the embedding itself when tied
};

inline const float* bias_or_null(const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); }

}  // namespace specscope
