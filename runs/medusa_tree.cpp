#include "runs/medusa_tree.h"

#include <algorithm>
#include <queue>

#include "engine/heads/medusa_head.h"
#include "engine/model/backend.h"
#include "engine/model/forward.h"
#include "engine/util/error.h"

namespace specscope::runs {

namespace {

int argmax(const float* x, int n) { return int(std::max_element(x, x + n) - x); }

// The rank of `token` among the top k of logits (k when it is not among them).
int rank_in_top_k(const std::vector<float>& logits, int token, int k) {
  const float v = logits[size_t(token)];
  int higher = 0;
  for (size_t i = 0; i < logits.size() && higher < k; ++i)
    if (logits[i] > v || (logits[i] == v && int(i) < token)) ++higher;
  return std::min(higher, k);
}

}  // namespace

std::vector<std::vector<double>> medusa_head_accuracies(const Model& target, const std::string& head_dir,
                                                        const std::vector<std::vector<int32_t>>& prompts,
                                                        int new_tokens, int k) {
  auto heads = MedusaHeads::load(head_dir, target);
  const int H = target.config().hidden_size, V = target.config().vocab_size, nh = heads->num_heads();
  std::vector<std::vector<double>> hits(size_t(nh), std::vector<double>(size_t(k), 0.0));
  double positions = 0;
  std::vector<float> logits(static_cast<size_t>(V));
  for (const auto& prompt : prompts) {
    if (prompt.empty()) continue;
    // The greedy continuation: the tokens the heads are asked to foresee.
    std::vector<int32_t> seq = prompt;
    {
      auto ctx = new_context(target, Backend::Cpu, 0);
      ForwardOutput out;
      Batch b = Batch::causal(prompt);
      b.logit_rows = {int(prompt.size()) - 1};
      ctx->forward(b, out);
      for (int t = 0; t < new_tokens && ctx->n_past() + 1 < ctx->n_ctx(); ++t) {
        seq.push_back(argmax(out.row_logits(0), V));
        Batch nb;
        nb.tokens = {seq.back()};
        ctx->forward(nb, out);
      }
    }
    // Every position's final hidden state in one forward; head h at position t predicts seq[t + 2 + h].
    auto ctx = new_context(target, Backend::Cpu, 0);
    ForwardOutput out;
    Batch b = Batch::causal(seq);
    b.taps.push_back(HiddenTap::final_norm());
    b.logit_rows = {int(seq.size()) - 1};
    ctx->forward(b, out);
    const std::vector<float>& hidden = out.hiddens.at(0);
    for (size_t t = prompt.size() - 1; t + 2 < seq.size(); ++t) {
      positions += 1;
      for (int h = 0; h < nh && t + 2 + size_t(h) < seq.size(); ++h) {
        heads->logits(h, hidden.data() + t * size_t(H), logits.data());
        const int r = rank_in_top_k(logits, seq[t + 2 + size_t(h)], k);
        if (r < k) hits[size_t(h)][size_t(r)] += 1;
      }
    }
  }
  if (positions == 0) throw InputError(head_dir, "no calibration positions for the Medusa heads");
  for (auto& row : hits)
    for (auto& v : row) v /= positions;
  return hits;
}

std::vector<std::vector<int>> medusa_sparse_tree(const std::vector<std::vector<double>>& acc, int n) {
  // Best-first over paths: a child's product never exceeds its parent's, so popping the highest product n times
  // yields the best n-node tree with every parent before its children.
  struct Item {
    double p;
    std::vector<int> path;
    bool operator<(const Item& o) const { return p < o.p || (p == o.p && path > o.path); }
  };
  std::priority_queue<Item> frontier;
  if (acc.empty()) return {};
  const int k = int(acc.front().size());
  for (int r = 0; r < k; ++r) frontier.push({acc[0][size_t(r)], {r}});
  std::vector<std::vector<int>> tree;
  while (int(tree.size()) < n && !frontier.empty()) {
    Item it = frontier.top();
    frontier.pop();
    if (it.p <= 0) break;  // never seen to be right: not worth a verified token
    tree.push_back(it.path);
    const size_t d = it.path.size();
    if (d < acc.size())
      for (int r = 0; r < k; ++r) {
        Item c{it.p * acc[d][size_t(r)], it.path};
        c.path.push_back(r);
        frontier.push(std::move(c));
      }
  }
  return tree;
}

double medusa_expected_accepts(const std::vector<std::vector<double>>& acc, const std::vector<std::vector<int>>& tree) {
  double sum = 0;
  for (const auto& path : tree) {
    double p = 1;
    for (size_t d = 0; d < path.size(); ++d) p *= d < acc.size() && size_t(path[d]) < acc[d].size() ? acc[d][size_t(path[d])] : 0;
    sum += p;
  }
  return sum;
}

}  // namespace specscope::runs
