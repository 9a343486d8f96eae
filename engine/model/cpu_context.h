#pragma once
// The CPU implementation of Context: an f32 KV cache and the Llama-family forward pass with tree masks.
#include <memory>
#include <vector>

#include "engine/model/forward.h"

namespace specscope {

class Model;

class CpuContext final : public Context {
 public:
  CpuContext(std::shared_ptr<const Model> model, int n_ctx);
  void forward(const Batch& batch, ForwardOutput& out) override;
  void keep(std::span<const int> rows) override;
  void truncate(int n_past) override;
  int n_past() const override { return n_past_; }
  int n_ctx() const override { return n_ctx_; }
  std::string backend_name() const override { return "cpu"; }

 private:
  void attention(int layer, int n, const int32_t* positions, const uint8_t* mask);
  float* k_slot(int layer, int slot) { return k_cache_[layer].data() + size_t(slot) * kv_dim_; }
  float* v_slot(int layer, int slot) { return v_cache_[layer].data() + size_t(slot) * kv_dim_; }

  std::shared_ptr<const Model> model_;
  int n_ctx_ = 0, n_past_ = 0, kv_dim_ = 0;
  int last_batch_start_ = -1, last_batch_size_ = 0;  // for keep()
  std::vector<std::vector<float>> k_cache_, v_cache_;  // per layer [n_ctx][kv_heads*head_dim]
  std::vector<int32_t> slot_pos_;                      // the position of each cache slot (sliding window)
  std::vector<float> inv_freq_;
  // Scratch, grown to the largest batch seen.
  std::vector<float> x_, h_, q_, k_, v_, att_, ffn_gate_, ffn_up_, scores_;
};

}  // namespace specscope
