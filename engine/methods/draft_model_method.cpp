#include "engine/methods/draft_model_method.h"

#include <algorithm>
#include <cmath>

#include "engine/model/model.h"
#include "engine/sampling/top_k.h"
#include "engine/tokenizer/shared_vocabulary.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"

namespace specscope {

DraftModelMethod::DraftModelMethod(std::shared_ptr<const Model> draft, const Model& target, SpsOptions o)
    : draft_(std::move(draft)), o_(std::move(o)) {
  if (o_.gamma < 1 || o_.gamma > 64) throw InputError("--gamma", "must be in 1..64");
  if (!(o_.confidence_threshold >= 0.f && o_.confidence_threshold < 1.f))
    throw InputError("--confidence-threshold", "must be in [0, 1)");
  for (int b : o_.branching)
    if (b < 1 || b > 16) throw InputError("--branching", "each branching factor must be in 1..16");
  if (const auto diff = first_token_mismatch(draft_->tokenizer(), target.tokenizer()))
    throw InputError(draft_->path(), "the draft model's tokenizer is not the target's (" + diff->describe() + ")");
  draft_rows_ = draft_->config().vocab_size;
  shared_rows_ = std::min(draft_rows_, target.config().vocab_size);
  const Tokenizer& dt = draft_->tokenizer();
  stand_in_ = dt.unk_id.value_or(dt.pad_id.value_or(dt.eos_id.value_or(0)));
  if (stand_in_ < 0 || stand_in_ >= draft_rows_) stand_in_ = 0;
}

int DraftModelMethod::branch_at(int depth) const {
  return depth - 1 < int(o_.branching.size()) ? o_.branching[depth - 1] : 1;
}

void DraftModelMethod::prefill(const DecodeState& st, const ForwardOutput&) {
  ctx_ = draft_->new_cpu_context(st.target->config().max_position_embeddings, o_.weights);
  cached_.clear();
}

std::pair<int, int> DraftModelMethod::take_draft_counts() {
  std::pair<int, int> r{forwards_, tokens_};
  forwards_ = tokens_ = 0;
  return r;
}

float DraftModelMethod::draft_cut() const {
  return o_.confidence_threshold > 0.f ? o_.confidence_threshold : kNoValue;
}

void DraftModelMethod::draft(const DecodeState& st, DraftTree& tree, int budget) {
  const int len = int(st.tokens.size());
  const int V = shared_rows_;  // the drafter's distribution over the ids the target can take
  const int draft_room = ctx_->n_ctx() - len - 1;
  budget = std::min(budget, draft_room);
  if (budget <= 0) return;
  // Catch the draft cache up with the committed sequence, root included; its last row predicts depth 1. What the
  // cache holds of it already (earlier steps' tokens, and a chain's drafts the target accepted) is kept; the root is
  // always run again, for its logits.
  size_t keep = 0;
  while (keep < cached_.size() && keep + 1 < size_t(len) && cached_[keep] == to_draft_id(st.tokens[keep])) ++keep;
  ctx_->truncate(int(keep));
  cached_.resize(keep);
  ForwardOutput out;
  {
    Batch b;
    for (size_t i = keep; i < size_t(len); ++i) b.tokens.push_back(to_draft_id(st.tokens[i]));
    b.logit_rows = {b.size() - 1};
    ctx_->forward(b, out);
    ++forwards_;
    tokens_ += b.size();
    cached_.insert(cached_.end(), b.tokens.begin(), b.tokens.end());
  }
  // While the drafts still to be drafted from form one path (a chain, classic SpS; or a tree whose other branches
  // ended below the confidence cut, as a top-2 first depth's runner-up mostly does), each new draft runs alone on top
  // of the cache, which then holds that path: one row a forward instead of the whole tree so far, and next step's
  // catch-up starts after the accepted drafts. Once two branches go on, the tree is run whole at each depth over the
  // committed prefix (in the cache a node would see its cousins). Batch invariance makes both give the same logits.
  int cached_path_end = -1;  // the node whose path from the root the cache holds after `len` (-1: none yet)
  bool tree_mode = false;
  // Frontier: (node id or -1 for the root, logits row in `out`).
  std::vector<std::pair<int, int>> frontier = {{-1, 0}};
  for (int depth = 1; depth <= o_.gamma && !frontier.empty(); ++depth) {
    const int k = branch_at(depth);
    std::vector<int> added;
    for (auto [node, row] : frontier) {
      const float* logits = out.row_logits(row);
      auto& info = tree.info_for_parent(node);
      if (st.sampling.greedy()) {
        // Deterministic: the top-k tokens.
        std::vector<float> probs = softmax_probs(logits, V);
        for (int t : top_k_indices(probs.data(), V, k)) {
          if (tree.size() >= budget) break;
          added.push_back(tree.add(node, t, probs[t], NodeSource::DraftModel));
        }
      } else {
        // Sampled i.i.d. from the drafter's processed distribution (chain: classic SpS; tree: SpecInfer).
        Distribution q = process_logits(logits, V, st.sampling);
        info.sampled = true;
        for (int i = 0; i < k && tree.size() < budget; ++i) {
          int32_t x = sample_from(q, *st.rng);
          added.push_back(tree.add(node, x, q.prob_of(x), NodeSource::DraftModel));
        }
        info.child_dist = std::move(q);
      }
    }
    // A drafted token below the confidence threshold is kept but not drafted on from: the target is likely to reject
    // it, and whatever follows it with it.
    std::erase_if(added, [&](int id) { return tree.nodes[size_t(id)].draft_prob < o_.confidence_threshold; });
    if (depth == o_.gamma || added.empty() || tree.size() >= budget) break;
    if (!tree_mode && added.size() == 1 && tree.nodes[size_t(added[0])].parent == cached_path_end) {
      cached_path_end = added[0];
      Batch b;
      b.tokens = {tree.nodes[size_t(added[0])].token};
      b.logit_rows = {0};
      ctx_->forward(b, out);
      ++forwards_;
      tokens_ += 1;
      cached_.push_back(b.tokens[0]);
      frontier = {{added[0], 0}};
      continue;
    }
    // Forward the whole tree so far over the committed prefix (the cache must not let a node see its
    // cousins, so the tree is re-run each depth; draft models are small and trees shallow).
    tree_mode = true;
    ctx_->truncate(len);
    std::vector<int> row_of_node;
    Batch tb = tree_batch(tree, st.tokens.back(), len - 1, row_of_node);
    // tree_batch puts the root at row 0, but the root is already cached: drop it.
    Batch b;
    const int rows = tb.size() - 1;
    b.tokens.assign(tb.tokens.begin() + 1, tb.tokens.end());
    b.positions.assign(tb.positions.begin() + 1, tb.positions.end());
    b.mask.resize(size_t(rows) * rows);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < rows; ++j) b.mask[size_t(i) * rows + j] = tb.mask[size_t(i + 1) * (rows + 1) + j + 1];
    for (int id : added) b.logit_rows.push_back(row_of_node[id] - 1);
    ctx_->forward(b, out);
    ++forwards_;
    tokens_ += b.size();
    frontier.clear();
    for (size_t i = 0; i < added.size(); ++i) frontier.push_back({added[i], int(i)});
  }
  if (tree_mode) {
    ctx_->truncate(len);
    cached_.resize(size_t(len));
  }
}

}  // namespace specscope
