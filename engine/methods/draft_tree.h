#pragma once
// A draft tree under construction and the verification batch it becomes: row 0 is the root (the last
// committed token, not yet in the target's cache), then one row per unpruned node, parents before children.
#include <optional>
#include <vector>

#include "engine/methods/step_record.h"
#include "engine/model/forward.h"
#include "engine/sampling/sampler.h"

namespace specscope {

struct DraftTree {
  std::vector<DraftNode> nodes;  // parents always precede children
  // How the children of each parent were chosen, indexed by parent + 1 (0: the root). Sampled: drawn i.i.d.
  // from `child_dist` (the drafter's processed distribution), verified with min(1, p/q) and residual
  // p - q. Deterministic (top-k, n-gram lookups, ...): verified by accepting x with probability p(x) and
  // zeroing p(x) on rejection — lossless whatever rule chose the candidates.
  struct ChildInfo {
    bool sampled = false;
    Distribution child_dist;
  };
  std::vector<ChildInfo> child_info;

  int add(int parent, int32_t token, float draft_prob, NodeSource src, int src_index = 0);
  int size() const { return int(nodes.size()); }
  ChildInfo& info_for_parent(int parent);  // parent -1 is the root
  std::vector<int> children_of(int parent) const;
  std::vector<int> path_to(int node) const;  // root-to-node node ids
  int max_depth() const;
  // Keeps only the first `max_nodes` unpruned nodes in order (their ancestors come first, so it stays a tree).
  void limit(int max_nodes);
};

// Turns a tree into the target batch [root, unpruned nodes...] with ancestor-closure mask and positions
// root_pos + depth. `row_of_node[i]` is node i's batch row, or -1 when pruned.
Batch tree_batch(const DraftTree& tree, int32_t root_token, int root_pos, std::vector<int>& row_of_node);

// Builds a static tree from an EAGLE/Medusa choice list: each entry is the path of top-k indices from the
// root (e.g. [0, 1] = second-best child of the best child). Returns parent index per entry (-1 = root) and
// the rank (top-k index) of each entry; entries are ordered so parents precede children.
struct ChoiceTree {
  std::vector<std::vector<int>> paths;
  std::vector<int> parent;
  std::vector<int> rank;
  std::vector<int> depth;
};
ChoiceTree build_choice_tree(std::vector<std::vector<int>> choices);

}  // namespace specscope
