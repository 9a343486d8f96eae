#include "engine/methods/medusa_method.h"

#include <algorithm>
#include <cmath>

#include "engine/methods/eagle_method.h"
#include "engine/model/model.h"
#include "engine/sampling/sampler.h"
#include "engine/sampling/top_k.h"

namespace specscope {

MedusaMethod::MedusaMethod(std::shared_ptr<const MedusaHeads> heads, MedusaOptions o)
    : heads_(std::move(heads)), o_(std::move(o)) {
  if (o_.tree.paths.empty()) o_.tree = build_choice_tree(medusa_default_choices());
}

std::pair<int, int> MedusaMethod::take_draft_counts() {
  std::pair<int, int> r{forwards_, forwards_};
  forwards_ = 0;
  return r;
}

void MedusaMethod::prefill(const DecodeState& st, const ForwardOutput& out) {
  const int H = out.hidden;
  const int last = int(st.tokens.size()) - 1;
  last_hidden_.assign(out.hiddens[0].begin() + size_t(last) * H, out.hiddens[0].begin() + size_t(last + 1) * H);
}

void MedusaMethod::commit(const DecodeState&, const ForwardOutput& out, const std::vector<int>& rows, int) {
  const int H = out.hidden;
  last_hidden_.assign(out.hiddens[0].begin() + size_t(rows.back()) * H,
                      out.hiddens[0].begin() + size_t(rows.back() + 1) * H);
}

void MedusaMethod::draft(const DecodeState& st, DraftTree& tree, int budget) {
  const ChoiceTree& ct = o_.tree;
  const int V = st.target->config().vocab_size;
  const int max_depth = *std::max_element(ct.depth.begin(), ct.depth.end());
  const int depths = std::min(max_depth, heads_->num_heads());
  // Head d (0-based) proposes depth d+1 below the root: its top-k by probability.
  std::vector<std::vector<float>> probs(depths);
  std::vector<std::vector<int>> top(depths);
  std::vector<float> logits(V);
  for (int d = 0; d < depths; ++d) {
    heads_->logits(d, last_hidden_.data(), logits.data());
    ++forwards_;
    probs[d] = softmax_probs(logits.data(), V);
    int need = 0;
    for (size_t e = 0; e < ct.paths.size(); ++e)
      if (ct.depth[e] == d + 1) need = std::max(need, ct.rank[e] + 1);
    top[d] = top_k_indices(probs[d].data(), V, need);
  }
  std::vector<int> node_of(ct.paths.size(), -1);
  for (size_t e = 0; e < ct.paths.size(); ++e) {
    const int d = ct.depth[e] - 1;
    if (d >= depths || tree.size() >= budget) continue;
    if (ct.parent[e] >= 0 && node_of[ct.parent[e]] < 0) continue;
    const int32_t tok = top[d][ct.rank[e]];
    node_of[e] = tree.add(ct.parent[e] < 0 ? -1 : node_of[ct.parent[e]], tok, probs[d][tok], NodeSource::MedusaHead, d);
  }
}

}  // namespace specscope
