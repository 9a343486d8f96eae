#pragma once
// Medusa-1 decoding: candidates from the heads' top-k arranged in a static sparse tree (a choice list;
// default mc_sim_7b_63), verified with tree attention in one target forward. Lossless verification by
// default; Medusa's typical acceptance is available as a lossy option and is marked so in every StepRecord.
#include <memory>

#include "engine/heads/medusa_head.h"
#include "engine/methods/draft_tree.h"
#include "engine/methods/method.h"

namespace specscope {

struct MedusaOptions {
  ChoiceTree tree;  // empty: mc_sim_7b_63
  std::optional<TypicalAcceptance> typical;  // lossy; off by default
};

class MedusaMethod final : public Method {
 public:
  MedusaMethod(std::shared_ptr<const MedusaHeads> heads, MedusaOptions o);
  std::string name() const override { return "medusa"; }
  std::vector<HiddenTap> target_taps() const override { return {HiddenTap::final_norm()}; }
  void prefill(const DecodeState& st, const ForwardOutput& out) override;
  void draft(const DecodeState& st, DraftTree& tree, int budget) override;
  void commit(const DecodeState& st, const ForwardOutput& out, const std::vector<int>& rows, int committed) override;
  std::pair<int, int> take_draft_counts() override;
  std::optional<TypicalAcceptance> typical_acceptance() const override { return o_.typical; }

 private:
  std::shared_ptr<const MedusaHeads> heads_;
  MedusaOptions o_;
  std::vector<float> last_hidden_;  // the target's final-norm hidden state of the row before the root
  int forwards_ = 0;
};

}  // namespace specscope
