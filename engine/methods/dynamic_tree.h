#pragma once
// EAGLE-2's dynamic draft tree (Li et al. 2024, "EAGLE-2"), as a pure function of the drafter's
// log-probabilities. The drafter itself (a head forward, its hidden states and cache) stays with the caller,
// which answers one `expand` call per level; this file only decides which nodes exist.
//
// Rules (matching the official code's flat score list):
//  - the root's top_k tokens are the first frontier; a node's score is its cumulative log-prob (its own
//    log-prob plus its parent's score);
//  - each of `depth` levels: every frontier row takes its top_k children (frontier order, then child rank);
//    the next frontier is the best top_k of those children by score;
//  - rerank: the best `max_nodes` candidates over all levels (ties to the earlier-created), emitted in
//    creation order so parents precede children. Top-k everywhere breaks ties to the lower index.
#include <cstdint>
#include <functional>
#include <vector>

namespace specscope {

struct DynamicTreeOptions {
  int top_k = 10;
  int depth = 5;       // expansion levels after the root's children (the tree can reach depth + 1)
  int max_nodes = 59;  // EAGLE's total_tokens - 1, capped by the caller's budget
};

// One row of the batch the drafter runs for a level.
struct FrontierRow {
  int32_t token;   // drafter vocabulary id of this frontier node
  int parent_row;  // row of the previous expand call whose output predicted it; -1: a child of the root
};

struct DynamicTreeNode {
  int parent;      // index in the returned vector, -1: the root
  int depth;       // 1 for the root's children
  int32_t token;   // drafter vocabulary id
  float logp;      // the drafter's log-probability of the token at its parent (draft prob = exp(logp))
  float score;     // cumulative log-probability from the root
};

// Fills log_probs[row * vocab + id] for every frontier row. `level` is 0 for the root's children.
using ExpandFn = std::function<void(int level, const std::vector<FrontierRow>& frontier, float* log_probs)>;

std::vector<DynamicTreeNode> build_dynamic_tree(const float* root_log_probs, int vocab, const DynamicTreeOptions& o,
                                                const ExpandFn& expand);

}  // namespace specscope
