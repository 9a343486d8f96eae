#include "engine/methods/verify.h"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "engine/sampling/logit_summary.h"
#include "engine/sampling/top_k.h"

namespace specscope {

namespace {

void check_row(const ForwardOutput& out, int row) {
  // Verification asks for all rows, so row r is logits row r; check rather than assume.
  if (row >= int(out.logit_rows.size()) || out.logit_rows[row] != row)
    throw std::logic_error("verify_tree: the forward did not return logits for every tree row");
}

const float* logits_of_row(const ForwardOutput& out, int row) {
  check_row(out, row);
  return out.row_logits(row);
}

// The target's processed distribution at a row: where the backend processes rows where its logits are, only the kept
// tokens cross (ForwardOutput::row_distribution).
Distribution distribution_of_row(const ForwardOutput& out, int row, const SamplingParams& sp) {
  check_row(out, row);
  return out.row_distribution(row, sp);
}

// A distribution over the tokens it gives mass to, in ascending id order: sampled verification's p and q (their
// supports are the kept tokens, a handful to a few hundred, and a residual max(p - q, 0) lies within p's), so its
// arithmetic costs their size, not the vocabulary's (128,256 at Llama 3). Every sum runs in ascending id order, as
// over a dense vector (whose zeros add nothing), and draws walk that order, so results are those of the dense form.
class SparseDist {
 public:
  static SparseDist of(const Distribution& d) {
    std::vector<std::pair<int32_t, double>> e;
    e.reserve(d.ids.size());
    for (size_t i = 0; i < d.ids.size(); ++i) e.push_back({d.ids[i], double(d.probs[i])});
    return SparseDist(std::move(e));
  }
  // From a dense vector: its nonzero entries.
  static SparseDist of(const std::vector<float>& dense) {
    std::vector<std::pair<int32_t, double>> e;
    for (size_t i = 0; i < dense.size(); ++i)
      if (dense[i] != 0.f) e.push_back({int32_t(i), double(dense[i])});
    return SparseDist(std::move(e));
  }
  double at(int32_t id) const {
    const auto it = std::lower_bound(e_.begin(), e_.end(), id, [](const auto& x, int32_t v) { return x.first < v; });
    return it != e_.end() && it->first == id ? it->second : 0.0;
  }
  void zero(int32_t id) {
    const auto it = std::lower_bound(e_.begin(), e_.end(), id, [](const auto& x, int32_t v) { return x.first < v; });
    if (it != e_.end() && it->first == id) it->second = 0.0;
  }
  // Divides by the total mass; false (and unchanged) when there is none.
  bool normalize() {
    double s = 0;
    for (const auto& [id, x] : e_) s += x;
    if (s <= 0) return false;
    for (auto& [id, x] : e_) x /= s;
    return true;
  }
  // max(this - q, 0), normalized; false when nothing is left (this == q: rejection had probability 0).
  bool residual_against(const SparseDist& q, SparseDist& out) const {
    out.e_.clear();
    for (const auto& [id, x] : e_) out.e_.push_back({id, std::max(x - q.at(id), 0.0)});
    return out.normalize();
  }
  // Inverse-CDF draw in ascending id order (id 0 when there is no mass at all, as over a dense vector of zeros).
  int32_t draw(Rng& rng) const {
    const double u = rng.uniform();
    double cum = 0;
    int32_t last = 0;
    for (const auto& [id, x] : e_) {
      if (x <= 0) continue;
      cum += x;
      last = id;
      if (u < cum) return id;
    }
    return last;
  }
  // The why panel's top kWhyTopK, as top_bars gives them from the dense form (ties to the lower id).
  std::vector<TokenProb> bars() const {
    std::vector<float> v;
    v.reserve(e_.size());
    for (const auto& [id, x] : e_) v.push_back(float(x));
    std::vector<TokenProb> out;
    for (int i : top_k_indices(v.data(), int(v.size()), kWhyTopK))
      if (v[size_t(i)] > 0) out.push_back({e_[size_t(i)].first, {}, v[size_t(i)]});
    return out;
  }

 private:
  SparseDist() = default;
  explicit SparseDist(std::vector<std::pair<int32_t, double>> e) : e_(std::move(e)) {
    std::sort(e_.begin(), e_.end());
  }
  std::vector<std::pair<int32_t, double>> e_;  // (id, mass), ascending id
};

// The top kWhyTopK of a dense distribution, for the "why" panel (texts are filled in by the caller, which has the
// tokenizer). The drafters' one top-k, so ties order the same way everywhere (lower id first).
template <class T>
std::vector<TokenProb> top_bars(const std::vector<T>& p) {
  std::vector<float> copy;  // only for a distribution kept in doubles
  const float* pf = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    pf = p.data();
  } else {
    copy.assign(p.begin(), p.end());
    pf = copy.data();
  }
  std::vector<TokenProb> out;
  for (int i : top_k_indices(pf, int(p.size()), kWhyTopK))
    if (pf[i] > 0) out.push_back({int32_t(i), {}, pf[i]});
  return out;
}

// Every child of `parent` gets the rule and the top-k of the distribution verification looked at there.
void mark_children(DraftTree& tree, const std::vector<int>& children, VerifyRule rule, const std::vector<TokenProb>& top) {
  for (int c : children) {
    tree.nodes[c].rule = rule;
    tree.nodes[c].target_top_k = top;
  }
}

static_assert(kSummaryTopK == kWhyTopK, "a row's summary keeps the why panel's bars");

std::vector<TokenProb> bars_of(const LogitSummary& s) {
  std::vector<TokenProb> out;
  for (int i = 0; i < s.top_count; ++i) out.push_back({s.top_ids[i], {}, s.top_probs[i]});
  return out;
}

// What greedy verification reads of one row: the backend's summary when it returned summaries (the logits stayed
// on its device), else one made here from the logits, for the rows verification visits and only those. Both give the
// same bits (summarize_logits is what the backends' references compute).
class GreedyRow {
 public:
  GreedyRow(const ForwardOutput& out, int row, const DraftTree& tree, const std::vector<int>& children) {
    child_probs_.resize(children.size());
    if (!out.summarized()) {
      std::vector<int32_t> tokens;
      for (int c : children) tokens.push_back(tree.nodes[c].token);
      summarize_logits(logits_of_row(out, row), out.vocab, tokens.data(), int(tokens.size()), summary_,
                       child_probs_.data());
      return;
    }
    if (row >= int(out.summaries.size()) || out.logit_rows[row] != row)
      throw std::logic_error("verify_tree: the forward did not summarize every tree row");
    summary_ = out.summaries[row];
    // Each drafted token's probability among the row's probes (the generator probes every child, in any order).
    const int begin = out.probe_start.empty() ? 0 : out.probe_start[row];
    const int end = out.probe_start.empty() ? 0 : out.probe_start[row + 1];
    for (size_t i = 0; i < children.size(); ++i) {
      const int32_t t = tree.nodes[children[i]].token;
      int j = begin;
      while (j < end && out.probe_tokens[j] != t) ++j;
      if (j == end) throw std::logic_error("verify_tree: the forward did not probe a drafted token");
      child_probs_[i] = out.probe_probs[j];
    }
  }
  const LogitSummary& summary() const { return summary_; }
  float child_prob(size_t i) const { return child_probs_[i]; }

 private:
  LogitSummary summary_;
  std::vector<float> child_probs_;
};

}  // namespace

VerifyResult verify_tree(DraftTree& tree, const ForwardOutput& out, const std::vector<int>& row_of_node,
                         const SamplingParams& sp, Rng& rng) {
  VerifyResult res;
  int cur = -1;  // the root
  for (;;) {
    const int row = cur < 0 ? 0 : row_of_node[cur];
    const std::vector<int> children = tree.children_of(cur);
    int accepted = -1;

    if (sp.greedy()) {
      const GreedyRow target(out, row, tree, children);
      const LogitSummary& sum = target.summary();
      const int32_t best = sum.argmax;
      if (!children.empty()) mark_children(tree, children, VerifyRule::Greedy, bars_of(sum));  // none: no bars
      for (size_t i = 0; i < children.size(); ++i) {
        auto& n = tree.nodes[children[i]];
        n.target_prob = target.child_prob(i);
        n.accept_prob = n.token == best ? 1.f : 0.f;
        if (accepted < 0 && n.token == best) {
          n.decision = NodeDecision::Accepted;
          accepted = children[i];
        } else {
          n.decision = NodeDecision::Rejected;
        }
      }
      if (accepted < 0) {
        res.bonus_token = best;
        res.bonus_source = BonusSource::Target;
        res.bonus_prob = sum.argmax_prob;
      }
    } else {
      const Distribution target = distribution_of_row(out, row, sp);
      SparseDist p = SparseDist::of(target);
      const DraftTree::ChildInfo* info =
          int(tree.child_info.size()) > cur + 1 ? &tree.child_info[cur + 1] : nullptr;
      const bool sampled = info && info->sampled;
      const SparseDist q = SparseDist::of(sampled ? info->child_dist : Distribution{});
      if (!children.empty())  // (a leaf's bars would go nowhere: vanilla's every step)
        mark_children(tree, children, sampled ? VerifyRule::Sampled : VerifyRule::Deterministic, p.bars());
      bool tried = false;
      for (int c : children) {
        auto& n = tree.nodes[c];
        n.target_prob = target.prob_of(n.token);
        const double px = p.at(n.token);
        n.tested_prob = float(px);  // after earlier siblings' rejections, what is left of p
        double a;
        if (sampled) {
          const double qx = q.at(n.token);
          a = qx > 0 ? std::min(1.0, px / qx) : 0.0;
        } else {
          a = px;
        }
        n.accept_prob = float(a);
        tried = true;
        const double u = rng.uniform();
        n.u = float(u);
        if (u < a) {
          n.decision = NodeDecision::Accepted;
          accepted = c;
          break;
        }
        n.decision = NodeDecision::Rejected;
        if (sampled) {
          SparseDist r = p;
          if (p.residual_against(q, r)) p = std::move(r);  // p == q exactly: rejection had probability 0; keep p
        } else {
          p.zero(n.token);
          p.normalize();
        }
      }
      if (accepted < 0) {
        res.bonus_token = p.draw(rng);
        res.bonus_source = tried ? BonusSource::Residual : BonusSource::Target;
        res.bonus_prob = float(p.at(res.bonus_token));
        if (tried) res.residual_top_k = p.bars();
      }
    }
    if (accepted < 0) break;
    res.accepted_path.push_back(accepted);
    cur = accepted;
  }
  return res;
}

VerifyResult verify_tree_typical(DraftTree& tree, const ForwardOutput& out, const std::vector<int>& row_of_node,
                                 const SamplingParams& sp, Rng& rng, const TypicalAcceptance& ta) {
  if (sp.greedy()) return verify_tree(tree, out, row_of_node, sp, rng);
  const int V = out.vocab;
  // Mark every reachable node accepted or rejected by the typical criterion at its parent.
  std::vector<int> frontier = {-1};
  std::vector<std::vector<float>> dist_at(tree.nodes.size() + 1);
  auto target_at = [&](int node) -> const std::vector<float>& {
    auto& d = dist_at[node + 1];
    if (d.empty()) {
      Distribution p = distribution_of_row(out, node < 0 ? 0 : row_of_node[node], sp);
      d.assign(V, 0.f);
      for (size_t i = 0; i < p.ids.size(); ++i) d[p.ids[i]] = p.probs[i];
    }
    return d;
  };
  std::vector<int> depth_reached(tree.nodes.size(), 0);
  int best = -1, best_len = 0;
  while (!frontier.empty()) {
    std::vector<int> next;
    for (int parent : frontier) {
      const auto& p = target_at(parent);
      double entropy = 0;
      for (float x : p)
        if (x > 0) entropy -= double(x) * std::log(double(x));
      const float thr = std::min(ta.posterior_threshold, float(ta.posterior_alpha * std::exp(-entropy)));
      const std::vector<int> children = tree.children_of(parent);
      mark_children(tree, children, VerifyRule::Typical, top_bars(p));
      for (int c : children) {
        auto& n = tree.nodes[c];
        n.target_prob = p[n.token];
        n.accept_prob = thr;
        if (n.target_prob > thr) {
          n.decision = NodeDecision::Accepted;
          const int len = parent < 0 ? 1 : depth_reached[parent] + 1;
          depth_reached[c] = len;
          if (len > best_len) {
            best_len = len;
            best = c;
          }
          next.push_back(c);
        } else {
          n.decision = NodeDecision::Rejected;
        }
      }
    }
    frontier = std::move(next);
  }
  VerifyResult res;
  if (best >= 0) res.accepted_path = tree.path_to(best);
  // Nodes accepted by the criterion but off the chosen path were not taken.
  for (auto& n : tree.nodes)
    if (n.decision == NodeDecision::Accepted &&
        std::find(res.accepted_path.begin(), res.accepted_path.end(), n.id) == res.accepted_path.end())
      n.decision = NodeDecision::NotReached;
  const auto& p = target_at(best);
  res.bonus_token = SparseDist::of(p).draw(rng);
  res.bonus_source = BonusSource::Target;
  res.bonus_prob = p[res.bonus_token];
  return res;
}

}  // namespace specscope
