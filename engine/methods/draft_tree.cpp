#include "engine/methods/draft_tree.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "engine/util/error.h"

namespace specscope {

int DraftTree::add(int parent, int32_t token, float draft_prob, NodeSource src, int src_index) {
  DraftNode n;
  n.id = int(nodes.size());
  n.parent = parent;
  n.depth = parent < 0 ? 1 : nodes.at(parent).depth + 1;
  n.token = token;
  n.draft_prob = draft_prob;
  n.source = src;
  n.source_index = src_index;
  nodes.push_back(n);
  return n.id;
}

DraftTree::ChildInfo& DraftTree::info_for_parent(int parent) {
  if (int(child_info.size()) <= parent + 1) child_info.resize(parent + 2);
  return child_info[parent + 1];
}

std::vector<int> DraftTree::children_of(int parent) const {
  std::vector<int> c;
  for (const auto& n : nodes)
    if (n.parent == parent && !n.pruned) c.push_back(n.id);
  return c;
}

std::vector<int> DraftTree::path_to(int node) const {
  std::vector<int> p;
  for (int x = node; x >= 0; x = nodes[x].parent) p.push_back(x);
  std::reverse(p.begin(), p.end());
  return p;
}

int DraftTree::max_depth() const {
  int d = 0;
  for (const auto& n : nodes)
    if (!n.pruned) d = std::max(d, n.depth);
  return d;
}

void DraftTree::limit(int max_nodes) {
  int kept = 0;
  for (auto& n : nodes) {
    if (n.pruned) continue;
    if (kept >= max_nodes || (n.parent >= 0 && nodes[n.parent].pruned)) {
      n.pruned = true;
      n.decision = NodeDecision::Pruned;
    } else {
      ++kept;
    }
  }
}

Batch tree_batch(const DraftTree& tree, int32_t root_token, int root_pos, std::vector<int>& row_of_node) {
  Batch b;
  row_of_node.assign(tree.nodes.size(), -1);
  b.tokens.push_back(root_token);
  b.positions.push_back(root_pos);
  for (const auto& n : tree.nodes) {
    if (n.pruned) continue;
    if (n.parent >= 0 && row_of_node[n.parent] < 0) throw std::logic_error("tree node kept under a pruned parent");
    row_of_node[n.id] = int(b.tokens.size());
    b.tokens.push_back(n.token);
    b.positions.push_back(root_pos + n.depth);
  }
  const int rows = int(b.tokens.size());
  b.mask.assign(size_t(rows) * rows, 0);
  b.mask[0] = 1;
  // Ancestor closure: a node's row is its parent's row plus itself (parents come first).
  for (const auto& n : tree.nodes) {
    const int r = row_of_node[n.id];
    if (r < 0) continue;
    const int pr = n.parent < 0 ? 0 : row_of_node[n.parent];
    for (int j = 0; j < rows; ++j) b.mask[size_t(r) * rows + j] = b.mask[size_t(pr) * rows + j];
    b.mask[size_t(r) * rows + r] = 1;
  }
  return b;
}

ChoiceTree build_choice_tree(std::vector<std::vector<int>> choices) {
  // Sort by depth then lexicographically, as EAGLE and Medusa do, so parents precede children.
  std::sort(choices.begin(), choices.end(), [](const auto& a, const auto& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  ChoiceTree t;
  std::map<std::vector<int>, int> index;
  for (const auto& c : choices) {
    if (c.empty()) throw InputError("tree choices", "empty path in the choice list");
    for (int k : c)
      if (k < 0) throw InputError("tree choices", "negative top-k index in the choice list");
    if (index.count(c)) throw InputError("tree choices", "duplicate path in the choice list");
    std::vector<int> parent_path(c.begin(), c.end() - 1);
    int parent = -1;
    if (!parent_path.empty()) {
      auto it = index.find(parent_path);
      if (it == index.end()) throw InputError("tree choices", "a path's parent is missing from the choice list");
      parent = it->second;
    }
    index[c] = int(t.paths.size());
    t.paths.push_back(c);
    t.parent.push_back(parent);
    t.rank.push_back(c.back());
    t.depth.push_back(int(c.size()));
  }
  return t;
}

}  // namespace specscope
