#pragma once
// One Llama decoder layer with its own small KV cache, as draft heads use it (EAGLE-1's layer without
// input_layernorm, EAGLE-3's midlayer over 2H inputs). The cache has committed slots, visible to every
// query, and tree slots, visible only to the queries that list them (their ancestors in the draft tree).
#include <vector>

#include "engine/model/config.h"
#include "engine/util/tensor.h"

namespace specscope {

struct HeadLayerWeights {
  TensorView wq, wk, wv, wo, w_gate, w_up, w_down;  // q/k/v take `in_dim` inputs
  std::vector<float> bq, bk, bv, bo;
  std::vector<float> post_attn_norm;
  int in_dim = 0;
};

class HeadCache {
 public:
  void reset(int capacity, int kv_dim);
  int committed() const { return committed_; }
  int size() const { return size_; }
  void drop_tree() { size_ = committed_; }  // forget every tree slot
  void truncate(int n) { committed_ = size_ = n; }

 private:
  friend void head_layer_forward(const HeadLayerWeights&, const ModelConfig&, const std::vector<float>&,
                                 const float*, float*, int, const int32_t*, HeadCache&,
                                 const std::vector<std::vector<int>>*);
  std::vector<float> k_, v_;
  int committed_ = 0, size_ = 0, capacity_ = 0, kv_dim_ = 0;
};

// Runs n rows through the layer. attn_in: [n][in_dim] (already normed/concatenated as the head requires);
// hidden: [n][H], the residual on input and the layer's output on return. With tree_visible null the rows
// are committed (causal among themselves, after every committed slot); otherwise they become tree slots and
// row i additionally sees the tree slots listed in (*tree_visible)[i] (absolute slot indices) and itself.
void head_layer_forward(const HeadLayerWeights& w, const ModelConfig& cfg, const std::vector<float>& inv_freq,
                        const float* attn_in, float* hidden, int n, const int32_t* positions, HeadCache& cache,
                        const std::vector<std::vector<int>>* tree_visible);

}  // namespace specscope
