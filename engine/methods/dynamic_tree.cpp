#include "engine/methods/dynamic_tree.h"

#include <algorithm>

#include "engine/sampling/top_k.h"

namespace specscope {
namespace {

// Whether no descendant of the frontier can make the rerank's best max_nodes: a child scores at most its parent
// (its log-prob is <= 0) and loses ties to every earlier candidate, so once max_nodes candidates score at least the
// best frontier node, expanding further only makes candidates the rerank drops. EAGLE-2's own code runs those
// expansions anyway (a head forward each); skipping them leaves the tree as it was. A chain (top_k 1) of
// total_tokens T with depth T - 1 saves its last head forward this way.
bool rerank_is_settled(const std::vector<DynamicTreeNode>& cands, const std::vector<int>& frontier, int max_nodes) {
  float best = cands[frontier.front()].score;
  for (int f : frontier) best = std::max(best, cands[f].score);
  int at_least = 0;
  for (const auto& c : cands) at_least += c.score >= best;
  return at_least >= max_nodes;
}

}  // namespace

std::vector<DynamicTreeNode> build_dynamic_tree(const float* root_lp, int vocab, const DynamicTreeOptions& o,
                                                const ExpandFn& expand) {
  const int K = o.top_k;
  std::vector<DynamicTreeNode> cands;  // every candidate, in creation order; parent = candidate index
  std::vector<int> frontier;           // candidate index of each frontier row
  std::vector<FrontierRow> rows;
  for (int d : top_k_indices(root_lp, vocab, K)) {
    frontier.push_back(int(cands.size()));
    rows.push_back({d, -1});
    cands.push_back({-1, 1, d, root_lp[d], root_lp[d]});
  }
  std::vector<float> lps;
  for (int level = 0; level < o.depth && !frontier.empty(); ++level) {
    if (rerank_is_settled(cands, frontier, o.max_nodes)) break;
    const int n = int(frontier.size());
    lps.assign(size_t(n) * vocab, 0.f);
    expand(level, rows, lps.data());
    const int level_start = int(cands.size());
    std::vector<int> row_of;  // per candidate of this level: the frontier row that produced it
    for (int r = 0; r < n; ++r) {
      const float* row = lps.data() + size_t(r) * vocab;
      const DynamicTreeNode parent = cands[frontier[r]];  // a copy: push_back below may reallocate
      for (int d : top_k_indices(row, vocab, K)) {
        cands.push_back({frontier[r], parent.depth + 1, d, row[d], row[d] + parent.score});
        row_of.push_back(r);
      }
    }
    // The next frontier: the best top_k of this level by cumulative score (best first).
    std::vector<float> level_scores;
    for (int c = level_start; c < int(cands.size()); ++c) level_scores.push_back(cands[c].score);
    std::vector<FrontierRow> next_rows;
    frontier.clear();
    for (int b : top_k_indices(level_scores.data(), int(level_scores.size()), K)) {
      frontier.push_back(level_start + b);
      next_rows.push_back({cands[level_start + b].token, row_of[b]});
    }
    rows = std::move(next_rows);
  }

  // Rerank: the best max_nodes candidates overall, in creation order (parents first).
  std::vector<float> scores;
  for (const auto& c : cands) scores.push_back(c.score);
  std::vector<int> chosen = top_k_indices(scores.data(), int(scores.size()), o.max_nodes);
  std::sort(chosen.begin(), chosen.end());
  std::vector<int> node_of(cands.size(), -1);
  std::vector<DynamicTreeNode> out;
  for (int c : chosen) {
    DynamicTreeNode n = cands[c];
    // A child never outscores its parent when log-probs are <= 0, and ties go to the earlier parent, so this
    // only drops a node for scores a real drafter cannot produce; it keeps the output a tree regardless.
    if (n.parent >= 0 && node_of[n.parent] < 0) continue;
    n.parent = n.parent < 0 ? -1 : node_of[n.parent];
    node_of[c] = int(out.size());
    out.push_back(n);
  }
  return out;
}

}  // namespace specscope
