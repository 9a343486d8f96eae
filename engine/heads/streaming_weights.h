#pragma once
// Speculative Streaming's extra tensors (Bhendawade et al., arXiv 2402.11131), as training/train_streaming.py
// exports them next to a fine-tuned model (docs/streaming-format.md): streaming_config.json and
// streaming.safetensors with the rank-eta stream map, the stream identifier embeddings and the rank-8
// early-exit pruning adapter. The LoRA adapters of the multi-stream layers are merged into the model itself.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/util/tensor.h"

namespace specscope {

class Model;
class TensorStore;

struct StreamingConfig {
  int num_streams = 0;        // gamma the model was trained with (the most streams it can run)
  int msa_layers = 0;         // Ns: the top layers that are multi-stream attention
  int stream_rank = 0;        // eta
  int prune_layer = 0;        // decoder layer whose output feeds the pruning adapter
  int prune_rank = 0;         // 8 in the paper
  float prune_threshold = 0;  // calibrated transition-probability threshold (0: no pruning)
  int top_k = 3;              // default tree width per stream
  int default_streams = 0;    // streams used by default (<= num_streams; 0 in the file: all of them)
  int total_tokens = 0;       // default tree node budget, most probable paths first (0: the whole k-ary tree)
};

class StreamingWeights {
 public:
  // `dir` holds streaming_config.json + streaming.safetensors (normally the fine-tuned model's own directory).
  // Throws InputError naming the file and the problem (missing, wrong shapes, sizes that do not fit `target`).
  static std::shared_ptr<const StreamingWeights> load(const std::string& dir, const Model& target);
  // Whether `dir` looks like it carries streaming tensors (streaming_config.json exists).
  static bool present(const std::string& dir);

  const StreamingConfig& config() const { return cfg_; }
  // Parameters beyond the fine-tuned model: gamma*H embeddings + 2*H*eta stream map + 2*H*prune_rank adapter.
  uint64_t parameter_count() const;

  TensorView stream_down, stream_up;  // [eta, H], [H, eta]
  TensorView prune_down, prune_up;    // [r, H], [H, r]
  std::vector<float> embeddings;      // [num_streams, H], f32

 private:
  StreamingConfig cfg_;
  std::shared_ptr<const TensorStore> store_;
};

}  // namespace specscope
