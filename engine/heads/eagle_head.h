#pragma once
// EAGLE draft heads in their official layouts, loaded from config.json + model.safetensors or
// pytorch_model.bin as published:
//  - EAGLE-1/2 (SafeAILab/EAGLE v1 heads): fc [H, 2H] (+bias) over concat(token embedding, feature), one
//    decoder layer without input_layernorm; the target's embedding and LM head are reused; the feature is
//    the target's final-norm hidden state.
//  - EAGLE-3: fc [H, 3H] fuses the target's residual inputs of layers 2, N/2, N-3; the midlayer attends over
//    concat(input_layernorm(embedding), hidden_norm(feature)) (2H); then its own norm and lm_head over a
//    draft vocabulary mapped to target ids by d2t.
#include <memory>
#include <string>
#include <vector>

#include "engine/cpu/weight_form.h"
#include "engine/heads/head_layer.h"
#include "engine/model/config.h"
#include "engine/model/forward.h"
#include "engine/util/tensor.h"

namespace specscope {

class Model;
class TensorStore;

class EagleHead {
 public:
  enum class Kind { Eagle1, Eagle3 };
  // Throws InputError naming the file and the problem (missing tensors, shapes that do not fit `target`).
  // form: the head's dense layers run on requantized copies (int8 per row or int4 per group of 32,
  // engine/cpu/weight_form.h; where the CPU has the kernel): fewer bytes beside the target in the caches; the drafts
  // change, the verified output not. EAGLE-1's LM head, the target's, is copied for the head (its int8 / int4 copy
  // costs half / 0.28 of its bf16 bytes in memory); the target's stays as loaded.
  static std::shared_ptr<const EagleHead> load(const std::string& dir, const Model& target,
                                               cpu::WeightForm form = cpu::WeightForm::AsLoaded);

  Kind kind() const { return kind_; }
  const ModelConfig& config() const { return cfg_; }
  int feature_dim() const { return feature_dim_; }  // H (EAGLE-1) or 3H (EAGLE-3) on the first step
  int draft_vocab() const { return draft_vocab_; }
  // The target hidden states this head consumes, in concatenation order.
  std::vector<HiddenTap> target_taps() const;
  uint64_t parameter_count() const;

  // Runs rows through the head: features [n][fdim] (fdim = feature_dim() for target features, or H for the
  // head's own outputs), tokens [n] (target ids), positions [n]. Writes the layer outputs to out_hidden [n][H].
  void forward(const float* features, int fdim, const int32_t* tokens, const int32_t* positions, int n,
               HeadCache& cache, const std::vector<std::vector<int>>* tree_visible, float* out_hidden) const;
  // Log-probabilities over the draft vocabulary for n hidden rows: [n][draft_vocab()].
  void log_probs(const float* hidden, int n, float* out) const;
  int32_t to_target(int32_t draft_id) const { return d2t_.empty() ? draft_id : draft_id + int32_t(d2t_[draft_id]); }
  int kv_dim() const { return cfg_.num_kv_heads * cfg_.head_dim; }

 private:
  Kind kind_ = Kind::Eagle1;
  ModelConfig cfg_;
  std::vector<float> inv_freq_;
  int feature_dim_ = 0, draft_vocab_ = 0;
  TensorView fc_;
  std::vector<float> fc_bias_;
  HeadLayerWeights layer_;
  std::vector<float> input_norm_, hidden_norm_, final_norm_;  // EAGLE-3
  TensorView embed_, lm_head_;                                // EAGLE-1: views of the target's
  std::vector<int64_t> d2t_;
  std::vector<int> tap_layers_;
  std::shared_ptr<const TensorStore> store_;
  std::shared_ptr<const Model> keep_target_;
};

}  // namespace specscope
