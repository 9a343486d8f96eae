#pragma once
// The CPU implementation of Context: an f32 KV cache and the Llama-family forward pass with tree masks.
#include <memory>
#include <vector>

#include "engine/cpu/attention.h"
#include "engine/cpu/matmul.h"
#include "engine/cpu/rope_table.h"
#include "engine/cpu/weight_form.h"

#include "engine/model/expert_routing.h"
#include "engine/model/forward.h"
#include "engine/model/weights.h"

namespace specscope {

class Model;

class CpuContext final : public Context {
 public:
  // form: the linear layers run on requantized copies of the weights (int8 per row or int4 per group of 32,
  // engine/cpu/weight_form.h), the model's one copy per form (Model::requantized_weights; where the CPU has the
  // kernel, else ignored). For drafters that share the caches with a target. AsLoaded: the model's copy in huge
  // pages (Model::resident_weights), where the weight-memory setting allows one.
  CpuContext(std::shared_ptr<const Model> model, int n_ctx, cpu::WeightForm form = cpu::WeightForm::AsLoaded);
  void forward(const Batch& batch, ForwardOutput& out) override;
  void keep(std::span<const int> rows) override;
  void truncate(int n_past) override;
  int n_past() const override { return n_past_; }
  int n_ctx() const override { return n_ctx_; }
  std::string backend_name() const override { return "cpu"; }

 private:
  void attention(int layer, int na, const int32_t* positions, const uint8_t* mask);
  void decoder_layer(int l, int na, const int32_t* pos, const uint8_t* mask);
  // DeepSeek's multi-head latent attention around attention() (cpu_mla.cpp): the latent and the rotary key into the
  // cache, and each head's query with kv_b's key part folded in (mla_q_); then the heads' weighted latents taken to
  // their values by kv_b's value part, into att_ (o_proj's input).
  void mla_project(int l, int na, const int32_t* pos);
  void mla_values(const LayerWeights& L, int na);
  void grow_mlp_scratch(int rows);
  // Inverse of active_[0..na): each batch row's index among the active rows, -1 for a pruned row.
  std::vector<int> active_index(int na) const;
  void project_qkv(const LayerWeights& L, const float* x, int rows);
  void finish_layer(const LayerWeights& L, float* x, int rows);
  void add_residual(const float* h, float* x, int rows) const;
  // gate = act(gate) * up over n values: the MLP's SwiGLU, or GeGLU (tanh) for Gemma.
  void gated_activation(float* gate, const float* up, int64_t n) const;
  // A mixture-of-experts layer's MLP over the `rows` normed rows in h_, in place (cpu_moe.cpp).
  void moe_mlp(const LayerWeights& L, int rows);
  void one_token_experts(const LayerWeights& L);
  // Qwen2-MoE's shared expert over the `rows` rows in h_, added to moe_out_ after the routed experts (cpu_moe.cpp).
  void add_shared_expert(const LayerWeights& L, int rows);
  void add_shared_outputs(const LayerWeights& L, int rows);
  // Scratch only ever grows (to the largest batch seen).
  static void grow(std::vector<float>& v, size_t n) {
    if (v.size() < n) v.resize(n);
  }
  // Speculative Streaming (cpu_streaming.cpp).
  int prune_rows(const StreamingRequest& sr, const Batch& b, int na);  // returns the surviving row count
  void begin_streams(const StreamingRequest& sr, int na);
  void stream_layer(int l, const StreamingRequest& sr, const int32_t* pos, const uint8_t* mask);
  void finish_streams(const StreamingRequest& sr, ForwardOutput& out);
  float* k_slot(int layer, int slot) { return k_cache_[layer].data() + size_t(slot) * kv_dim_; }
  float* v_slot(int layer, int slot) { return v_cache_[layer].data() + size_t(slot) * v_dim_; }
  // The keys each of the na active rows sees in a layer of `window` (0: the whole context), into visible_[window > 0].
  void compute_visible(int na, const int32_t* pos, const uint8_t* mask, int window);
  // Layer l's RoPE angles: Gemma's sliding layers have their own theta.
  cpu::RopeTable& rope_for(int layer);
  // Writes the keys of the na active rows in k_ into the transposed copy attention reads (engine/cpu/attention.h), at
  // their slots n_past + row, and moves a slot.
  void put_kt_rows(int layer, int na);
  void move_kt(int layer, int dst, int src);

  std::shared_ptr<const Model> model_;
  // The model's weights with requantized copies (when a form was asked for), or in huge pages
  // (Model::resident_weights); null: the model's own, read from the file's mapping.
  std::shared_ptr<const ModelWeights> own_weights_;
  const ModelWeights& weights() const;
  // A cache slot's key and value widths: kv_heads x head_dim each, or with MLA the latent and the rotary key as one
  // key head (key_head_dim_ wide) and the latent as its value.
  int n_ctx_ = 0, n_past_ = 0, kv_dim_ = 0, v_dim_ = 0, key_head_dim_ = 0;
  int last_batch_start_ = -1, last_batch_size_ = 0;  // for keep()
  std::vector<std::vector<float>> k_cache_, v_cache_;  // per layer [n_ctx][kv_heads*head_dim]
  std::vector<std::vector<float>> kt_cache_;           // per layer [kv_heads*head_dim][kt_stride_]: keys transposed
  size_t kt_stride_ = 0;
  std::vector<int32_t> slot_pos_;                      // the position of each cache slot (sliding window)
  cpu::RopeTable rope_;        // the angles of every position used
  cpu::RopeTable rope_local_;  // the sliding layers' (ModelConfig::rope_local_theta), when they have their own
  // The batch rows still computed, as batch indices (pruning drops rows mid-forward; each row keeps its cache
  // slot n_past + batch index), and which batch rows are alive.
  std::vector<int> active_;
  std::vector<uint8_t> alive_;
  int batch_n_ = 0;
  // Speculative streams of the current forward: their source rows (batch indices) and residual states
  // [sources * streams][H]; they never enter the cache.
  std::vector<int> stream_src_;
  std::vector<float> xs_;
  int n_streams_ = 0;
  // Scratch, grown to the largest batch seen.
  std::vector<float> x_, h_, q_, k_, v_, att_, ffn_gate_, ffn_up_, scores_;
  // MLA: the query's low-rank input, each head's nope queries and their latent images gathered head by head, the
  // absorbed queries [rows][heads][key_head_dim_], the latent outputs, and the heads' values head by head.
  std::vector<float> mla_qa_, mla_nope_, mla_qlat_, mla_q_, mla_lat_, mla_heads_, mla_v_;
  std::vector<cpu::LinearInput> mla_products_;
  // Mixture-of-experts layers: the router's logits, one expert's gathered rows and outputs, the weighted sums.
  std::vector<float> router_, moe_x_, moe_y_, moe_out_;
  ExpertRouting routing_;
  std::vector<cpu::LinearOutput> expert_outputs_;  // a decode step's chosen experts' gate and up products
  std::vector<cpu::LinearInput> expert_inputs_;    // and their down products
  // The shared expert's gate and up products and its outputs.
  std::vector<float> shared_gate_, shared_up_, shared_y_;
  // Which keys attention sees, for layers that attend to the whole context [0] and for sliding ones [1]:
  // [active rows][keys], and packed (attention.h); computed once per forward for each kind of layer it has.
  struct Visible {
    std::vector<uint8_t> keys;
    cpu::VisibleKeys packed;
    bool current = false;  // holds this forward's active rows: the same for every layer until rows are pruned
  };
  Visible visible_[2];
  std::vector<size_t> kt_offsets_;  // put_kt_rows: each active row's place in a dimension's tile row
  void forget_visible() { visible_[0].current = visible_[1].current = false; }
};

}  // namespace specscope
