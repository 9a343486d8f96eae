#include "engine/model/expert_routing.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/cpu/ops.h"
#include "engine/model/config.h"
#include "engine/model/expert_choice.h"
#include "engine/model/weights.h"

namespace specscope {

RoutingRule routing_rule(const ModelConfig& c, const LayerWeights& L) {
  RoutingRule r{c.num_experts, c.experts_per_token, c.norm_topk_prob};
  r.sigmoid = c.expert_sigmoid;
  r.choice_bias = L.expert_choice_bias.empty() ? nullptr : L.expert_choice_bias.data();
  r.groups = c.expert_groups;
  r.groups_used = c.expert_groups_used;
  r.groups_by_top_two = c.groups_by_top_two;
  r.scale = c.routed_scaling;
  return r;
}

namespace {

// DeepSeek's choice, as transformers' DeepseekV2TopkRouter / DeepseekV3TopkRouter compute it: the scores chosen by
// (plus the choice bias), the groups' ranks (their best score, or the sum of their two best), every expert outside
// the groups_used best groups masked, then the per_token best of the rest; the weights are the unbiased scores of the
// chosen, renormalized when asked (V3 adds 1e-20 to the sum), times the scale. Ties go to the lower index.
void choose_deepseek(const float* score, const RoutingRule& r, std::vector<float>& choice, int* pick, float* w) {
  const int E = r.experts;
  choice.assign(score, score + E);
  if (r.choice_bias)
    for (int e = 0; e < E; ++e) choice[size_t(e)] += r.choice_bias[e];
  if (r.groups > 0) {
    const int per_group = E / r.groups;
    std::vector<float> rank(size_t(r.groups));
    for (int g = 0; g < r.groups; ++g) {
      const float* s = choice.data() + size_t(g) * size_t(per_group);
      float best = -std::numeric_limits<float>::infinity(), second = best;
      for (int i = 0; i < per_group; ++i) {
        if (s[i] > best) {
          second = best;
          best = s[i];
        } else if (s[i] > second) {
          second = s[i];
        }
      }
      rank[size_t(g)] = r.groups_by_top_two ? best + second : best;
    }
    std::vector<uint8_t> kept(size_t(r.groups), 0);
    for (int k = 0; k < r.groups_used; ++k) {
      int best = -1;
      for (int g = 0; g < r.groups; ++g)
        if (!kept[size_t(g)] && (best < 0 || rank[size_t(g)] > rank[size_t(best)])) best = g;
      kept[size_t(best)] = 1;
    }
    // V2 masks with 0 (its softmax scores are positive), V3 with -inf; either way a masked expert is never chosen
    // while an unmasked one is left, and per_token never exceeds what the kept groups hold (parse_deepseek_moe).
    for (int e = 0; e < E; ++e)
      if (!kept[size_t(e / per_group)]) choice[size_t(e)] = -std::numeric_limits<float>::infinity();
  }
  choose_experts(choice.data(), E, r.per_token, false, pick, w);
  float sum = 0.f;
  for (int k = 0; k < r.per_token; ++k) sum += (w[k] = score[pick[k]]);
  if (r.normalize) {
    const float denominator = sum + (r.sigmoid ? 1e-20f : 0.f);
    for (int k = 0; k < r.per_token; ++k) w[k] /= denominator;
  }
  for (int k = 0; k < r.per_token; ++k) w[k] *= r.scale;
}

// Mixtral's and Qwen's rule: a softmax's most probable, as choose_experts computes it for the CPU and the GPU alike.
bool plain_rule(const RoutingRule& r) { return !r.sigmoid && !r.choice_bias && r.groups == 0 && r.scale == 1.f; }

}  // namespace

void ExpertRouting::route(float* logits, int rows, const RoutingRule& rule) {
  const int experts = rule.experts, per_token = rule.per_token;
  chosen_.resize(size_t(rows) * size_t(per_token));
  weights_.resize(chosen_.size());
  start_.assign(size_t(experts) + 1, 0);
  const bool plain = plain_rule(rule);
  for (int r = 0; r < rows; ++r) {
    float* p = logits + size_t(r) * size_t(experts);
    if (rule.sigmoid) {
      for (int e = 0; e < experts; ++e) p[e] = 1.f / (1.f + std::exp(-p[e]));
    } else {
      cpu::softmax(p, experts);
    }
    int* pick = chosen_.data() + size_t(r) * size_t(per_token);
    float* w = weights_.data() + size_t(r) * size_t(per_token);
    if (plain) choose_experts(p, experts, per_token, rule.normalize, pick, w);
    else choose_deepseek(p, rule, choice_, pick, w);
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
