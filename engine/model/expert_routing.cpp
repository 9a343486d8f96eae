#include "engine/model/expert_routing.h"

#include "engine/cpu/ops.h"
#include "engine/model/expert_choice.h"

namespace specscope {

void ExpertRouting::route(float* logits, int rows, int experts, int per_token, bool normalize) {
  chosen_.resize(size_t(rows) * size_t(per_token));
  weights_.resize(chosen_.size());
  start_.assign(size_t(experts) + 1, 0);
  for (int r = 0; r < rows; ++r) {
    float* p = logits + size_t(r) * size_t(experts);
    cpu::softmax(p, experts);
    int* pick = chosen_.data() + size_t(r) * size_t(per_token);
    choose_experts(p, experts, per_token, normalize, pick, weights_.data() + size_t(r) * size_t(per_token));
    for (int k = 0; k < per_token; ++k) ++start_[size_t(pick[k]) + 1];
  }
  for (int e = 0; e < experts; ++e) start_[size_t(e) + 1] += start_[size_t(e)];
  routes_.resize(chosen_.size());
  std::vector<int> fill(start_.begin(), start_.end() - 1);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < per_token; ++k) {
      const size_t i = size_t(r) * size_t(per_token) + size_t(k);
      routes_[size_t(fill[size_t(chosen_[i])]++)] = {r, weights_[i]};
    }
}

int ExpertRouting::experts_hit() const {
  int hit = 0;
  for (int e = 0; e < experts(); ++e) hit += count(e) > 0;
  return hit;
}

}  // namespace specscope
