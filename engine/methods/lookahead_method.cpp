#include "engine/methods/lookahead_method.h"

#include <algorithm>

#include "engine/model/model.h"
#include "engine/sampling/sampler.h"
#include "engine/util/error.h"

namespace specscope {

LookaheadMethod::LookaheadMethod(LookaheadOptions o) : o_(o) {
  if (o_.window < 1 || o_.window > 64) throw InputError("--window", "must be in 1..64");
  if (o_.ngram < 2 || o_.ngram > 16) throw InputError("--ngram", "must be in 2..16");
  if (o_.guesses < 0 || o_.guesses > 64) throw InputError("--guesses", "must be in 0..64");
}

size_t LookaheadMethod::pool_size() const {
  size_t n = 0;
  for (auto& [k, v] : pool_) n += v.size();
  return n;
}

void LookaheadMethod::prefill(const DecodeState& st, const ForwardOutput&) {
  vocab_ = st.target->config().vocab_size;
  pool_.clear();
  rng_.reseed(12345);
  // Seed the window with tokens drawn from the prompt, as the reference implementations do.
  window_.assign(o_.ngram - 1, std::vector<int32_t>(o_.window));
  for (auto& level : window_)
    for (auto& t : level) t = st.tokens[rng_.next() % st.tokens.size()];
}

void LookaheadMethod::add_ngram(const std::vector<int32_t>& g) {
  auto& list = pool_[g[0]];
  std::vector<int32_t> tail(g.begin() + 1, g.end());
  auto it = std::find(list.begin(), list.end(), tail);
  if (it != list.end()) list.erase(it);
  list.push_back(tail);
  while (int(list.size()) > o_.guesses) list.pop_front();
}

void LookaheadMethod::draft(const DecodeState& st, DraftTree& tree, int budget) {
  auto it = pool_.find(st.tokens.back());
  if (it == pool_.end()) return;
  // Newest guesses first; shared prefixes become one branch of the tree.
  for (auto g = it->second.rbegin(); g != it->second.rend(); ++g) {
    int parent = -1;
    for (int32_t t : *g) {
      int found = -1;
      for (int c : tree.children_of(parent))
        if (tree.nodes[c].token == t) found = c;
      if (found < 0) {
        if (tree.size() >= budget) return;
        found = tree.add(parent, t, kNoValue, NodeSource::NgramPool, int(g->size()) + 1);
      }
      parent = found;
    }
  }
}

void LookaheadMethod::extra_rows(const DecodeState& st, ExtraRows& rows) {
  // Sequence s (column s) is: root, level-0 columns 0..s, then levels 1.. of column s, at consecutive positions.
  const int W = o_.window, L = o_.ngram - 1;
  const int root_pos = int(st.tokens.size()) - 1;
  for (int l = 0; l < L; ++l)
    for (int w = 0; w < W; ++w) {
      rows.tokens.push_back(window_[l][w]);
      rows.positions.push_back(root_pos + 1 + l + w);
      std::vector<int> vis;
      for (int c = 0; c < (l == 0 ? w : w + 1); ++c) vis.push_back(c);  // level 0, columns before (and own)
      for (int ll = 1; ll < l; ++ll) vis.push_back(ll * W + w);          // earlier levels of this column
      rows.visible.push_back(vis);
    }
}

void LookaheadMethod::observe_extra(const DecodeState&, const ForwardOutput& out, int first_row) {
  const int W = o_.window, L = o_.ngram - 1;
  // One Jacobi iteration: each window token's prediction (greedy) is the next level's entry.
  std::vector<int32_t> next(W);
  for (int w = 0; w < W; ++w) next[w] = out.row_argmax(first_row + (L - 1) * W + w);
  // Each column's trajectory plus its new token is an n-gram.
  for (int w = 0; w < W; ++w) {
    std::vector<int32_t> g;
    for (int l = 0; l < L; ++l) g.push_back(window_[l][w]);
    g.push_back(next[w]);
    add_ngram(g);
  }
  for (int l = 0; l + 1 < L; ++l) window_[l] = window_[l + 1];
  window_[L - 1] = next;
}

void LookaheadMethod::commit(const DecodeState&, const ForwardOutput&, const std::vector<int>& rows, int committed) {
  // More than one committed token moves the sequence ahead of the window: shift the columns left.
  const int shift = std::min(committed - 1, o_.window - 1);
  if (shift <= 0) return;
  for (auto& level : window_) {
    std::rotate(level.begin(), level.begin() + shift, level.end());
  }
}

}  // namespace specscope
