#pragma once
// Classic speculative decoding with a smaller draft model sharing the tokenizer (Leviathan et al. 2023;
// Chen et al. 2023): a chain of gamma tokens, or a SpecInfer-style tree with a branching factor per depth.
#include <memory>
#include <vector>

#include "engine/cpu/weight_form.h"
#include "engine/methods/method.h"

namespace specscope {

struct SpsOptions {
  int gamma = 4;                 // chain length (depth of the tree)
  std::vector<int> branching;    // children per node at each depth; empty: a chain (all 1)
  cpu::WeightForm weights = cpu::WeightForm::AsLoaded;  // the drafter's linear layers' form (engine/cpu/weight_form.h)
  // Dynamic draft length (transformers' assistant_confidence_threshold, after Mamou et al. 2024, "Dynamic
  // Speculation Lookahead"): a drafted token the drafter gives less than this probability ends its branch, itself
  // included. 0: off, every branch gamma deep. Only the draft's length changes, so the output does not.
  float confidence_threshold = 0.f;
};

class DraftModelMethod final : public Method {
 public:
  // Throws InputError when the two tokenizers give some id they share different tokens (shared_vocabulary.h).
  // Vocabularies may differ past the shared ids (padding, a family's extra tokens): drafts are drawn from the ids
  // both models have, and a committed token the drafter has no row for is shown to it as a stand-in (its unknown
  // token, else its padding, else its end token; to_draft_id): drafting after it is poorer, never wrong, since the
  // target verifies every draft.
  DraftModelMethod(std::shared_ptr<const Model> draft, const Model& target, SpsOptions o);
  std::string name() const override { return "sps"; }
  void prefill(const DecodeState& st, const ForwardOutput& out) override;
  void draft(const DecodeState& st, DraftTree& tree, int budget) override;
  std::pair<int, int> take_draft_counts() override;
  float draft_cut() const override;

 private:
  int branch_at(int depth) const;  // depth 1-based
  // The id the drafter is given for the committed token `t` (its own ids are the target's below its vocabulary).
  int32_t to_draft_id(int32_t t) const { return t < draft_rows_ ? t : stand_in_; }
  std::shared_ptr<const Model> draft_;
  std::unique_ptr<Context> ctx_;
  SpsOptions o_;
  // The tokens whose keys and values the draft cache holds, slot by slot: committed tokens and, after a chain, the
  // drafted ones, which the next step keeps as far as the target accepted them (a token's KV depends only on the
  // tokens before it, so any prefix shared with the new sequence is still valid).
  std::vector<int32_t> cached_;
  int forwards_ = 0, tokens_ = 0;
  int draft_rows_ = 0;  // the drafter's vocabulary: the ids it can embed
  int shared_rows_ = 0;  // the ids both models have rows for: what a draft may be
  int32_t stand_in_ = 0;  // what the drafter sees for a committed id past draft_rows_
};

}  // namespace specscope
