#include "engine/methods/eagle_method.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>

#include "engine/methods/dynamic_tree.h"
#include "engine/model/model.h"
#include "engine/sampling/top_k.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"

namespace specscope {

const std::vector<std::vector<int>>& eagle_default_choices() {
  static const std::vector<std::vector<int>> c = {
      {0}, {1}, {2}, {3}, {0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {2, 0}, {2, 1}, {3, 0}, {0, 0, 0}, {0, 0, 1},
      {0, 0, 2}, {0, 1, 0}, {0, 1, 1}, {0, 2, 0}, {0, 2, 1}, {1, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 0, 2},
      {0, 0, 0, 0, 0}, {0, 0, 0, 0, 1}};
  return c;
}

const std::vector<std::vector<int>>& medusa_default_choices() {
  static const std::vector<std::vector<int>> c = {
      {0}, {0, 0}, {1}, {0, 1}, {2}, {0, 0, 0}, {1, 0}, {0, 2}, {3}, {0, 3}, {4}, {0, 4}, {2, 0}, {0, 5}, {0, 0, 1},
      {5}, {0, 6}, {6}, {0, 7}, {0, 1, 0}, {1, 1}, {7}, {0, 8}, {0, 0, 2}, {3, 0}, {0, 9}, {8}, {9}, {1, 0, 0},
      {0, 2, 0}, {1, 2}, {0, 0, 3}, {4, 0}, {2, 1}, {0, 0, 4}, {0, 0, 5}, {0, 0, 0, 0}, {0, 1, 1}, {0, 0, 6},
      {0, 3, 0}, {5, 0}, {1, 3}, {0, 0, 7}, {0, 0, 8}, {0, 0, 9}, {6, 0}, {0, 4, 0}, {1, 4}, {7, 0}, {0, 1, 2},
      {2, 0, 0}, {3, 1}, {2, 2}, {8, 0}, {0, 5, 0}, {1, 5}, {1, 0, 1}, {0, 2, 1}, {9, 0}, {0, 6, 0}, {0, 0, 0, 1},
      {1, 6}, {0, 7, 0}};
  return c;
}

std::vector<std::vector<int>> load_choices(const std::string& path, const std::string& key) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, std::string("invalid JSON: ") + e.what());
  }
  if (j.is_object()) {
    if (key.empty() || !j.contains(key)) throw InputError(path, "no choice list named '" + key + "'");
    j = j[key];
  }
  std::vector<std::vector<int>> out;
  if (!j.is_array()) throw InputError(path, "a choice list is a JSON array of arrays of integers");
  for (auto& c : j) {
    if (!c.is_array()) throw InputError(path, "a choice list is a JSON array of arrays of integers");
    std::vector<int> p;
    for (auto& k : c) {
      if (!k.is_number_integer() || k.get<int>() < 0 || k.get<int>() > 1000)
        throw InputError(path, "choice indices must be small non-negative integers");
      p.push_back(k.get<int>());
    }
    out.push_back(p);
  }
  return out;
}

EagleMethod::EagleMethod(std::string name, std::shared_ptr<const EagleHead> head, EagleOptions o)
    : name_(std::move(name)), head_(std::move(head)), o_(std::move(o)) {
  if (o_.dynamic) {
    if (o_.top_k < 1 || o_.top_k > 64) throw InputError("--top-k-draft", "must be in 1..64");
    if (o_.depth < 0 || o_.depth > 32) throw InputError("--depth", "must be in 0..32");
    if (o_.total_tokens < 2) throw InputError("--total-tokens", "must be >= 2");
  } else if (o_.static_tree.paths.empty()) {
    o_.static_tree = build_choice_tree(eagle_default_choices());
  }
}

std::pair<int, int> EagleMethod::take_draft_counts() {
  std::pair<int, int> r{forwards_, tokens_};
  forwards_ = tokens_ = 0;
  return r;
}

// Concatenates the tapped hidden states (EAGLE-3: low, mid, high) of the given batch rows.
void EagleMethod::take_features(const ForwardOutput& out, const std::vector<int>& rows, int first_pos) {
  const int H = out.hidden, fd = head_->feature_dim();
  pending_.assign(size_t(rows.size()) * fd, 0.f);
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t t = 0; t < out.hiddens.size(); ++t)
      std::memcpy(pending_.data() + r * fd + t * H, out.hiddens[t].data() + size_t(rows[r]) * H, sizeof(float) * H);
  pending_rows_ = int(rows.size());
  pending_pos_ = first_pos;
}

void EagleMethod::prefill(const DecodeState& st, const ForwardOutput& out) {
  cache_.reset(st.target->config().max_position_embeddings + 2 * o_.total_tokens + 64 * 64, head_->kv_dim());
  std::vector<int> rows(st.tokens.size());
  std::iota(rows.begin(), rows.end(), 0);
  take_features(out, rows, 0);
}

void EagleMethod::commit(const DecodeState& st, const ForwardOutput& out, const std::vector<int>& rows, int) {
  // The kept rows are the root (at position len - rows - 1) and the accepted nodes after it.
  take_features(out, rows, int(st.tokens.size()) - int(rows.size()) - 1);
}

void EagleMethod::draft(const DecodeState& st, DraftTree& tree, int budget) {
  const int H = head_->config().hidden_size;
  // Feed the pending features with their shifted tokens: feature at p pairs with token p+1.
  cache_.drop_tree();
  if (cache_.committed() != pending_pos_) cache_.truncate(std::min(cache_.committed(), pending_pos_));
  std::vector<int32_t> toks(pending_rows_), pos(pending_rows_);
  for (int i = 0; i < pending_rows_; ++i) {
    pos[i] = pending_pos_ + i;
    toks[i] = st.tokens.at(size_t(pending_pos_ + i + 1));
  }
  std::vector<float> out(size_t(pending_rows_) * H);
  head_->forward(pending_.data(), head_->feature_dim(), toks.data(), pos.data(), pending_rows_, cache_, nullptr,
                 out.data());
  ++forwards_;
  tokens_ += pending_rows_;
  pending_pos_ += pending_rows_;
  pending_rows_ = 0;
  std::vector<float> last(out.end() - H, out.end());
  if (budget <= 0) return;
  if (o_.dynamic) draft_dynamic(st, tree, budget, last);
  else draft_static(st, tree, budget, last);
  cache_.drop_tree();
}

void EagleMethod::draft_dynamic(const DecodeState& st, DraftTree& tree, int budget,
                                const std::vector<float>& last_hidden) {
  const int H = head_->config().hidden_size, Vd = head_->draft_vocab();
  const int len = int(st.tokens.size());
  std::vector<float> root_lp(Vd);
  head_->log_probs(last_hidden.data(), 1, root_lp.data());
  // The previous level's head outputs (each row's output is its children's input hidden) and, per row, the
  // head-cache tree slots it saw; a child sees its parent row's slots plus the parent row itself.
  std::vector<float> prev_out;
  std::vector<std::vector<int>> prev_visible;
  int prev_first_slot = 0;
  auto expand = [&](int level, const std::vector<FrontierRow>& frontier, float* lps) {
    const int n = int(frontier.size());
    std::vector<float> in(size_t(n) * H), out(size_t(n) * H);
    std::vector<int32_t> toks(n), pos(n, len - 1 + level);
    std::vector<std::vector<int>> visible(n);
    for (int r = 0; r < n; ++r) {
      const int pr = frontier[r].parent_row;
      const float* h = pr < 0 ? last_hidden.data() : prev_out.data() + size_t(pr) * H;
      std::memcpy(in.data() + size_t(r) * H, h, sizeof(float) * H);
      toks[r] = head_->to_target(frontier[r].token);
      if (pr >= 0) {
        visible[r] = prev_visible[pr];
        visible[r].push_back(prev_first_slot + pr);
      }
    }
    const int first_slot = cache_.size();
    head_->forward(in.data(), H, toks.data(), pos.data(), n, cache_, &visible, out.data());
    ++forwards_;
    tokens_ += n;
    head_->log_probs(out.data(), n, lps);
    prev_out = std::move(out);
    prev_visible = std::move(visible);
    prev_first_slot = first_slot;
  };
  const DynamicTreeOptions dto{o_.top_k, o_.depth, std::min(o_.total_tokens - 1, budget)};
  std::vector<int> id_of;  // tree node id of each returned node
  for (const DynamicTreeNode& n : build_dynamic_tree(root_lp.data(), Vd, dto, expand)) {
    const int id = tree.add(n.parent < 0 ? -1 : id_of[n.parent], head_->to_target(n.token), std::exp(n.logp),
                            NodeSource::EagleHead);
    tree.nodes[id].cum_score = n.score;
    id_of.push_back(id);
  }
}

void EagleMethod::draft_static(const DecodeState& st, DraftTree& tree, int budget,
                               const std::vector<float>& last_hidden) {
  const int H = head_->config().hidden_size, Vd = head_->draft_vocab();
  const int len = int(st.tokens.size());
  const ChoiceTree& ct = o_.static_tree;
  const int max_rank = *std::max_element(ct.rank.begin(), ct.rank.end()) + 1;
  // Per tree entry: its node id, the head output at its parent (its input hidden), its head-cache slot.
  std::vector<int> node_of(ct.paths.size(), -1), slot_of(ct.paths.size(), -1);
  std::vector<std::vector<float>> hidden_in(ct.paths.size());
  std::vector<std::vector<int>> top_of_entry(ct.paths.size());  // top-k draft ids after each entry
  std::vector<float> lp(Vd);
  head_->log_probs(last_hidden.data(), 1, lp.data());
  std::vector<int> root_top = top_k_indices(lp.data(), Vd, max_rank);
  std::vector<float> root_lp = lp;
  std::vector<std::vector<float>> lp_of_entry(ct.paths.size());
  const int max_depth = *std::max_element(ct.depth.begin(), ct.depth.end());
  for (int depth = 1; depth <= max_depth; ++depth) {
    // Create this depth's nodes from their parents' top-k lists.
    std::vector<int> level;
    for (size_t e = 0; e < ct.paths.size(); ++e) {
      if (ct.depth[e] != depth) continue;
      const int parent = ct.parent[e];
      const auto& top = parent < 0 ? root_top : top_of_entry[parent];
      const auto& plp = parent < 0 ? root_lp : lp_of_entry[parent];
      if (parent >= 0 && node_of[parent] < 0) continue;
      if (ct.rank[e] >= int(top.size()) || tree.size() >= budget) continue;
      const int d = top[ct.rank[e]];
      node_of[e] = tree.add(parent < 0 ? -1 : node_of[parent], head_->to_target(d), std::exp(plp[d]),
                            NodeSource::EagleHead, ct.rank[e]);
      hidden_in[e] = parent < 0 ? last_hidden : std::vector<float>();
      level.push_back(int(e));
    }
    if (depth == max_depth) break;
    // Forward the nodes that have children, to get their children's candidates.
    std::vector<int> expand;
    for (int e : level)
      if (std::find(ct.parent.begin(), ct.parent.end(), e) != ct.parent.end()) expand.push_back(e);
    if (expand.empty()) break;
    const int n = int(expand.size());
    std::vector<float> in(size_t(n) * H), out(size_t(n) * H);
    std::vector<int32_t> toks(n), pos(n, len - 1 + depth - 1);
    std::vector<std::vector<int>> visible(n);
    for (int r = 0; r < n; ++r) {
      const int e = expand[r];
      toks[r] = tree.nodes[node_of[e]].token;
      std::memcpy(in.data() + size_t(r) * H, hidden_in[e].data(), sizeof(float) * H);
      for (int a = ct.parent[e]; a >= 0; a = ct.parent[a]) visible[r].push_back(slot_of[a]);
    }
    const int first_slot = cache_.size();
    head_->forward(in.data(), H, toks.data(), pos.data(), n, cache_, &visible, out.data());
    ++forwards_;
    tokens_ += n;
    std::vector<float> lps(size_t(n) * Vd);
    head_->log_probs(out.data(), n, lps.data());
    for (int r = 0; r < n; ++r) {
      const int e = expand[r];
      slot_of[e] = first_slot + r;
      lp_of_entry[e].assign(lps.begin() + size_t(r) * Vd, lps.begin() + size_t(r + 1) * Vd);
      top_of_entry[e] = top_k_indices(lp_of_entry[e].data(), Vd, max_rank);
      for (size_t c = 0; c < ct.paths.size(); ++c)
        if (ct.parent[c] == e) hidden_in[c].assign(out.begin() + size_t(r) * H, out.begin() + size_t(r + 1) * H);
    }
  }
}

}  // namespace specscope
