#include "engine/methods/streaming_method.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <queue>

#include "engine/cpu/matmul.h"
#include "engine/model/final_logits.h"
#include "engine/model/model.h"
#include "engine/sampling/sampler.h"
#include "engine/sampling/top_k.h"
#include "engine/util/error.h"

namespace specscope {

StreamingMethod::StreamingMethod(std::shared_ptr<const StreamingWeights> weights, StreamingOptions o,
                                 const Model& target)
    : weights_(std::move(weights)), o_(o), vocab_(target.config().vocab_size) {
  const auto& c = weights_->config();
  const int N = target.config().num_layers;
  if (o_.streams == 0) o_.streams = c.default_streams;
  if (o_.top_k == 0) o_.top_k = c.top_k;
  if (o_.msa_layers == 0) o_.msa_layers = c.msa_layers;
  if (o_.prune_threshold < 0) o_.prune_threshold = c.prune_threshold;
  if (o_.total_tokens < 0) o_.total_tokens = c.total_tokens;
  if (o_.streams < 1 || o_.streams > c.num_streams)
    throw InputError("--gamma", "must be in 1.." + std::to_string(c.num_streams) + " (the streams this model has)");
  if (o_.top_k < 1 || o_.top_k > 32) throw InputError("--k", "must be in 1..32");
  if (o_.msa_layers < 1 || o_.msa_layers > N) throw InputError("--msa-layers", "must be in 1.." + std::to_string(N));
  if (o_.prune_threshold >= 1.f) throw InputError("--prune-threshold", "must be below 1");
  if (o_.prune_threshold > 0 && c.prune_layer >= N - o_.msa_layers)
    throw InputError("--msa-layers", "with " + std::to_string(o_.msa_layers) + " MSA layers the streams start at layer " +
                                         std::to_string(N - o_.msa_layers) + ", before the pruning layer " +
                                         std::to_string(c.prune_layer) + "; use fewer or --prune-threshold 0");
  if (o_.msa_layers != c.msa_layers)
    spdlog::warn("streaming: {} MSA layers requested, the model was trained with {}: still lossless, lower tau",
                 o_.msa_layers, c.msa_layers);
}

void StreamingMethod::shape_forward(const DecodeState& st, Batch& b, const DraftTree* tree,
                                    const std::vector<int>* row_of_node) {
  StreamingRequest sr;
  sr.weights = weights_.get();
  sr.streams = o_.streams;
  sr.msa_layers = o_.msa_layers;
  if (!tree) {
    sr.stream_rows = {b.size() - 1};  // the prompt: only its last row drafts
  } else if (o_.prune_threshold > 0) {
    sr.prune_threshold = o_.prune_threshold;
    sr.parent_row.assign(b.size(), -1);
    for (const auto& n : tree->nodes) {
      const int row = (*row_of_node)[n.id];
      if (row >= 0) sr.parent_row[row] = n.parent < 0 ? 0 : (*row_of_node)[n.parent];
    }
  }
  b.streaming = std::move(sr);
}

// The LM head for the streams of the one row that matters (the last accepted one).
void StreamingMethod::keep_streams_of(const Model& model, const ForwardOutput& out, int row) {
  auto it = std::find(out.stream_rows.begin(), out.stream_rows.end(), row);
  if (it == out.stream_rows.end()) throw std::logic_error("streaming: the accepted row has no streams");
  const int k = int(it - out.stream_rows.begin());
  stream_logits_.resize(size_t(out.streams) * vocab_);
  cpu::linear(out.stream_row_hidden(k, 0), out.streams, model.weights().lm_head, nullptr, stream_logits_.data());
  finish_logits(model.config(), stream_logits_.data(), int64_t(stream_logits_.size()));
}

void StreamingMethod::prefill(const DecodeState& st, const ForwardOutput& out) {
  keep_streams_of(*st.target, out, int(st.tokens.size()) - 1);
}

void StreamingMethod::commit(const DecodeState& st, const ForwardOutput& out, const std::vector<int>& rows, int) {
  keep_streams_of(*st.target, out, rows.back());
}

void StreamingMethod::draft(const DecodeState& st, DraftTree& tree, int budget) {
  if (stream_logits_.empty()) return;
  const int G = o_.streams, k = o_.top_k;
  // Stream j's candidates are the same under every parent (streams do not see the draft): the tree is the
  // Cartesian product of the streams' top-k.
  std::vector<std::vector<int>> top(G);
  std::vector<std::vector<float>> prob(G);
  for (int j = 0; j < G; ++j) {
    const std::vector<float> probs = softmax_probs(stream_logits_.data() + size_t(j) * vocab_, vocab_);
    top[j] = top_k_indices(probs.data(), vocab_, k);
    for (int tok : top[j]) prob[j].push_back(probs[tok]);
  }
  if (o_.total_tokens > 0) {
    // A node budget: the paths with the highest product of stream probabilities first (a child's product never
    // exceeds its parent's, so parents still precede children), as Medusa's and EAGLE-2's trees are chosen.
    struct Candidate {
      float joint;
      int parent, depth, rank;
      bool operator<(const Candidate& o) const { return joint < o.joint; }
    };
    std::priority_queue<Candidate> open;
    for (int r = 0; r < k; ++r) open.push({prob[0][r], -1, 0, r});
    const int limit = std::min(budget, o_.total_tokens);
    while (!open.empty() && tree.size() < limit) {
      const Candidate c = open.top();
      open.pop();
      const int id = tree.add(c.parent, top[c.depth][c.rank], prob[c.depth][c.rank], NodeSource::Stream, c.depth + 1);
      if (c.depth + 1 < G)
        for (int r = 0; r < k; ++r) open.push({c.joint * prob[c.depth + 1][r], id, c.depth + 1, r});
    }
    return;
  }
  // The whole k-ary tree, depth by depth so parents precede children.
  std::vector<int> frontier = {-1};
  for (int j = 0; j < G && tree.size() < budget; ++j) {
    std::vector<int> next;
    for (int parent : frontier)
      for (int r = 0; r < k; ++r) {
        if (tree.size() >= budget) break;
        next.push_back(tree.add(parent, top[j][r], prob[j][r], NodeSource::Stream, j + 1));
      }
    frontier = std::move(next);
  }
}

}  // namespace specscope
