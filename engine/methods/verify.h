#pragma once
// Lossless verification of a draft tree against the target's logits.
//  - Greedy: follow the child equal to the target's argmax at each node; the bonus is the argmax at the end.
//  - T > 0: recursive multi-round speculative sampling over siblings (SpecInfer / EAGLE). Sampled children
//    are accepted with min(1, p/q) and the residual becomes norm(max(p - q, 0)); deterministically chosen
//    children are accepted with p(x) and x is then zeroed out. Either way the committed tokens are
//    distributed exactly as the target's (processed) distribution.
#include <vector>

#include "engine/methods/draft_tree.h"
#include "engine/model/forward.h"
#include "engine/sampling/rng.h"
#include "engine/sampling/sampler.h"

namespace specscope {

struct VerifyResult {
  std::vector<int> accepted_path;  // node ids
  int32_t bonus_token = -1;
  BonusSource bonus_source = BonusSource::Target;
  float bonus_prob = 0.f;
  std::vector<TokenProb> residual_top_k;  // bonus_source Residual: the top of what it was drawn from (no texts)
};

// Medusa's typical acceptance (lossy): a node is accepted when the target's probability of it exceeds
// min(threshold, alpha * exp(-entropy of the target distribution)); the longest accepted root path wins;
// the bonus token is sampled from the target. At T = 0 it reduces to greedy matching.
struct TypicalAcceptance {
  float posterior_threshold = 0.09f;
  float posterior_alpha = 0.3f;
};

// `out` holds logits for every row of the tree batch; `row_of_node` maps nodes to rows (row 0: root).
// Fills each node's target_prob, accept_prob and decision, and what the "why" panel shows: the rule, u, the
// probability tested and the target's top-k (token texts left empty: the caller has the tokenizer).
VerifyResult verify_tree(DraftTree& tree, const ForwardOutput& out, const std::vector<int>& row_of_node,
                         const SamplingParams& sp, Rng& rng);
VerifyResult verify_tree_typical(DraftTree& tree, const ForwardOutput& out, const std::vector<int>& row_of_node,
                                 const SamplingParams& sp, Rng& rng, const TypicalAcceptance& ta);

}  // namespace specscope
