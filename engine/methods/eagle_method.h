#pragma once
// EAGLE drafting (Li et al. 2024): the head autoregresses at the feature level, each step consuming the
// target's feature at position p together with the token at p+1 (the shifted token).
//  - eagle1: the official static tree (a choice list, default EAGLE's mc_sim_7b_63: 25 nodes, depth 5).
//  - eagle2 / eagle3: EAGLE-2's dynamic tree: the root's top_k children, then `depth` rounds in which every
//    frontier node takes its top_k children scored by cumulative log-probability and the best top_k become
//    the next frontier; finally the best total_tokens-1 of all candidates, parents first (the rules are the
//    pure build_dynamic_tree in dynamic_tree.h; this class runs the head for it).
#include <memory>

#include "engine/heads/eagle_head.h"
#include "engine/methods/method.h"

namespace specscope {

struct EagleOptions {
  bool dynamic = true;
  int total_tokens = 60;  // including the root, as EAGLE counts
  int depth = 5;
  int top_k = 10;
  ChoiceTree static_tree;  // used when !dynamic
};

// EAGLE's default static tree (mc_sim_7b_63: 25 nodes, depth 5) and Medusa's (63 nodes, depth 4).
const std::vector<std::vector<int>>& eagle_default_choices();
const std::vector<std::vector<int>>& medusa_default_choices();
// Reads a choice list: a JSON array of arrays, or an object holding one under `key`.
std::vector<std::vector<int>> load_choices(const std::string& path, const std::string& key = "");

class EagleMethod final : public Method {
 public:
  EagleMethod(std::string name, std::shared_ptr<const EagleHead> head, EagleOptions o);
  std::string name() const override { return name_; }
  std::vector<HiddenTap> target_taps() const override { return head_->target_taps(); }
  void prefill(const DecodeState& st, const ForwardOutput& out) override;
  void draft(const DecodeState& st, DraftTree& tree, int budget) override;
  void commit(const DecodeState& st, const ForwardOutput& out, const std::vector<int>& rows, int committed) override;
  std::pair<int, int> take_draft_counts() override;

 private:
  void take_features(const ForwardOutput& out, const std::vector<int>& rows, int first_pos);
  void draft_dynamic(const DecodeState& st, DraftTree& tree, int budget, const std::vector<float>& last_hidden);
  void draft_static(const DecodeState& st, DraftTree& tree, int budget, const std::vector<float>& last_hidden);

  std::string name_;
  std::shared_ptr<const EagleHead> head_;
  EagleOptions o_;
  HeadCache cache_;
  std::vector<float> pending_;  // target features not yet consumed by the head, [rows][feature_dim]
  int pending_rows_ = 0, pending_pos_ = 0;
  int forwards_ = 0, tokens_ = 0;
};

}  // namespace specscope
