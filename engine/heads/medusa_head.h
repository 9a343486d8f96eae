#pragma once
// Medusa-1 heads (Cai et al. 2024) as FasterDecoding/Medusa publishes them: config.json (medusa_num_heads,
// medusa_num_layers) + medusa_lm_head.safetensors or medusa_lm_head.pt. Head i = ResBlock x L, then a
// Linear(H, V) without bias; ResBlock(x) = x + SiLU(W x + b). Head i reads the target's last hidden state
// (after its final norm) and predicts the token i+2 positions ahead.
#include <memory>
#include <string>
#include <vector>

#include "engine/cpu/weight_form.h"
#include "engine/util/tensor.h"

namespace specscope {

class Model;
class TensorStore;

class MedusaHeads {
 public:
  // form: the heads' layers on requantized copies (int8 per row or int4 per group of 32, engine/cpu/weight_form.h;
  // where the CPU has the kernel): five heads with their own LM heads are 17 MB as bf16 on the shipped family, more
  // than half the target's bytes, read every step; as int4 4.8 MB. The drafts change, the verified output not.
  static std::shared_ptr<const MedusaHeads> load(const std::string& dir, const Model& target,
                                                 cpu::WeightForm form = cpu::WeightForm::AsLoaded);
  int num_heads() const { return int(heads_.size()); }
  int num_layers() const { return num_layers_; }
  uint64_t parameter_count() const;
  // Logits of head i for one hidden state [H] -> out [V].
  void logits(int head, const float* hidden, float* out) const;

 private:
  struct Head {
    std::vector<TensorView> w;
    std::vector<std::vector<float>> b;
    TensorView out;
  };
  std::vector<Head> heads_;
  int num_layers_ = 1, hidden_ = 0, vocab_ = 0;
  std::shared_ptr<const TensorStore> store_;
};

}  // namespace specscope
