#pragma once
// Speculative Streaming (Bhendawade et al., arXiv 2402.11131): the model drafts with its own top layers.
// Every step is exactly one target forward that both verifies the previous draft tree and, through gamma
// speculative streams on every surviving tree row (multi-stream attention in the top Ns layers), proposes the
// next one: after verification, the streams of the last accepted row give the next tree, the top-k of stream j
// at depth j under every depth j-1 node (a full k-ary tree, fixed for fixed gamma and k), or, with a node budget
// (total_tokens), that many of its nodes, the paths with the highest product of stream probabilities (our
// addition: the paper prunes the whole tree only inside the forward, after every node has cost a row through the
// bottom layers). Rows whose early-exit transition probability falls under the calibrated threshold are pruned
// inside that forward before they reach the streams; the StepRecord marks them pruned. Verification is the
// engine's lossless tree verification (greedy matching; at T > 0 deterministic candidates are accepted with p(x)).
#include <memory>

#include "engine/heads/streaming_weights.h"
#include "engine/methods/method.h"

namespace specscope {

struct StreamingOptions {
  int streams = 0;             // gamma; 0: the number the model was trained with
  int top_k = 0;               // k; 0: the model's default (streaming_config.json)
  int msa_layers = 0;          // Ns; 0: the trained value (others are allowed but off-distribution: lower tau)
  float prune_threshold = -1;  // < 0: the calibrated one; 0: no pruning
  int total_tokens = -1;       // the tree's node budget, most probable paths first; 0: the whole k-ary tree;
                               // < 0: the model's default (streaming_config.json, else 0)
};

class StreamingMethod final : public Method {
 public:
  StreamingMethod(std::shared_ptr<const StreamingWeights> weights, StreamingOptions o, const Model& target);
  std::string name() const override { return "streaming"; }
  void shape_forward(const DecodeState& st, Batch& b, const DraftTree* tree,
                     const std::vector<int>* row_of_node) override;
  void prefill(const DecodeState& st, const ForwardOutput& out) override;
  void draft(const DecodeState& st, DraftTree& tree, int budget) override;
  void commit(const DecodeState& st, const ForwardOutput& out, const std::vector<int>& rows, int committed) override;
  const StreamingOptions& options() const { return o_; }

 private:
  void keep_streams_of(const Model& model, const ForwardOutput& out, int row);

  std::shared_ptr<const StreamingWeights> weights_;
  StreamingOptions o_;
  int vocab_ = 0;
  std::vector<float> stream_logits_;  // streams x vocab: the last accepted row's speculative streams
};

}  // namespace specscope
