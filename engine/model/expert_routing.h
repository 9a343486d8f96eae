#pragma once
// Which experts each token of a mixture-of-experts layer goes to, and with what weight (ModelConfig::num_experts):
// a softmax of the router's logits, the experts_per_token most probable (ties to the lower index, as llama.cpp's
// argsort), their probabilities as weights, renormalized to sum to 1 when asked (Mixtral, Qwen3-MoE's
// norm_topk_prob). As transformers' Qwen3MoeTopKRouter and MixtralTopKRouter compute it, in f32.
#include <cstdint>
#include <vector>

namespace specscope {

struct ExpertRoute {
  int row = 0;        // the token's row in the batch
  float weight = 0.f;  // what the expert's output is multiplied by before it is added to the row's
};

// Routes of one layer's batch, grouped by expert: routes_of(e) lists the rows expert e computes, in row order. A row's
// outputs are then summed in expert order, the order transformers' loop over the hit experts adds them in, so a row's
// sum does not depend on the other rows of its batch.
class ExpertRouting {
 public:
  // logits: rows x experts, row-major (overwritten with the probabilities).
  void route(float* logits, int rows, int experts, int per_token, bool normalize);
  int experts() const { return int(start_.size()) - 1; }
  // The rows expert e computes and their weights.
  const ExpertRoute* begin(int e) const { return routes_.data() + start_[size_t(e)]; }
  const ExpertRoute* end(int e) const { return routes_.data() + start_[size_t(e) + 1]; }
  int count(int e) const { return start_[size_t(e) + 1] - start_[size_t(e)]; }
  // How many experts compute at least one row: what a forward of this batch reads of the layer's experts.
  int experts_hit() const;

 private:
  std::vector<ExpertRoute> routes_;
  std::vector<int> start_;      // experts + 1 offsets into routes_
  std::vector<int> chosen_;     // rows x per_token expert indices
  std::vector<float> weights_;  // rows x per_token
};

}  // namespace specscope
