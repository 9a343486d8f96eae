#pragma once
// The tensors of a Llama-family decoder, as views into memory-mapped safetensors files.
#include <optional>
#include <vector>

#include "engine/util/tensor.h"

namespace specscope {

struct LayerWeights {
  TensorView input_norm, post_attn_norm;   // [H]
  TensorView wq, wk, wv, wo;               // [out, in] PyTorch Linear layout
  std::optional<TensorView> bq, bk, bv;    // Qwen2 / attention_bias
  std::optional<TensorView> bo;            // attention_bias on Llama
  TensorView w_gate, w_up, w_down;
  std::optional<TensorView> b_gate, b_up, b_down;  // mlp_bias
};

struct ModelWeights {
  TensorView embed;                 // [V, H]
  std::vector<LayerWeights> layers;
  TensorView final_norm;            // [H]
  TensorView lm_head;               // [V, H]; the embedding when tied
};

}  // namespace specscope
