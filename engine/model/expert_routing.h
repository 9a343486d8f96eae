#pragma once
// Which experts each token of a mixture-of-experts layer goes to, and with what weight (ModelConfig::num_experts):
// a softmax of the router's logits, the experts_per_token most probable (ties to the lower index, as llama.cpp's
// argsort), their probabilities as weights, renormalized to sum to 1 when asked (Mixtral, Qwen3-MoE's
// norm_topk_prob). As transformers' Qwen3MoeTopKRouter and MixtralTopKRouter compute it, in f32.
#include <cstdint>
#include <vector>

namespace specscope {

struct ModelConfig;
struct LayerWeights;

// How one layer turns router logits into experts and weights. The defaults are Mixtral's and Qwen's (a softmax, the
// per_token most probable, renormalized when `normalize`); DeepSeek's add sigmoid scores, a bias on the scores experts
// are chosen by, groups, and a scale on the weights (ModelConfig::expert_sigmoid and the fields after it).
struct RoutingRule {
  int experts = 0, per_token = 0;
  bool normalize = true;
  bool sigmoid = false;
  const float* choice_bias = nullptr;  // [experts] or null
  int groups = 0, groups_used = 0;     // 0 groups: none
  bool groups_by_top_two = false;      // a group's rank: the sum of its two best scores (V3), else its best (V2)
  float scale = 1.f;
};
RoutingRule routing_rule(const ModelConfig& c, const LayerWeights& L);

struct ExpertRoute {
  int row = 0;        // the token's row in the batch
  float weight = 0.f;  // what the expert's output is multiplied by before it is added to the row's
};

// Routes of one layer's batch, grouped by expert: routes_of(e) lists the rows expert e computes, in row order. A row's
// outputs are then summed in expert order, the order transformers' loop over the hit experts adds them in, so a row's
// sum does not depend on the other rows of its batch.
class ExpertRouting {
 public:
  // logits: rows x experts, row-major (overwritten with the scores).
  void route(float* logits, int rows, const RoutingRule& rule);
  void route(float* logits, int rows, int experts, int per_token, bool normalize) {
    route(logits, rows, RoutingRule{experts, per_token, normalize});
  }
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
  std::vector<float> choice_;   // one row's scores to choose by (DeepSeek's biased, group-masked ones)
};

}  // namespace specscope
