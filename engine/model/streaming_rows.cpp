#include "engine/model/streaming_rows.h"

#include <stdexcept>
#include <string>

#include "engine/heads/streaming_weights.h"
#include "engine/util/error.h"

namespace specscope {

void check_streaming(const StreamingRequest& sr, const ModelConfig& c, int n) {
  if (c.mla()) throw InputError("batch", "Speculative Streaming's streams are not written for multi-head latent attention (DeepSeek)");
  if (!sr.weights) throw InputError("batch", "streaming request without streaming weights");
  const auto& sc = sr.weights->config();
  if (sr.streams < 1 || sr.streams > sc.num_streams)
    throw InputError("batch", "streams must be in 1.." + std::to_string(sc.num_streams));
  if (sr.msa_layers < 1 || sr.msa_layers > c.num_layers)
    throw InputError("batch", "msa_layers must be in 1.." + std::to_string(c.num_layers));
  for (int r : sr.stream_rows)
    if (r < 0 || r >= n) throw InputError("batch", "stream row out of range");
  if (!sr.parent_row.empty()) {
    if (int(sr.parent_row.size()) != n) throw InputError("batch", "parent_row must have one entry per row");
    for (int i = 0; i < n; ++i)
      if (sr.parent_row[i] >= i) throw InputError("batch", "a row's parent must come before it");
    if (sc.prune_layer >= c.num_layers - sr.msa_layers)
      throw InputError("batch", "pruning (after layer " + std::to_string(sc.prune_layer) +
                                    ") must happen before the streams start (layer " +
                                    std::to_string(c.num_layers - sr.msa_layers) + ")");
  }
}

std::vector<int> prune_parents(const StreamingRequest& sr, std::span<const int> rows) {
  std::vector<int> parents;
  if (sr.parent_row.empty()) return parents;
  std::vector<uint8_t> seen(sr.parent_row.size(), 0);
  for (int row : rows) {
    const int p = sr.parent_row[size_t(row)];
    if (p >= 0 && !seen[size_t(p)]) {
      seen[size_t(p)] = 1;
      parents.push_back(p);
    }
  }
  return parents;
}

void settle_pruning(const StreamingRequest& sr, std::span<const int32_t> tokens, std::span<const int> rows,
                    std::span<const int> parents, const float* probs, int vocab, std::vector<uint8_t>& alive) {
  std::vector<int> slot_of_parent(sr.parent_row.size(), -1);
  for (size_t k = 0; k < parents.size(); ++k) slot_of_parent[size_t(parents[k])] = int(k);
  for (int row : rows) {
    const int p = sr.parent_row[size_t(row)];
    if (p < 0) continue;
    if (slot_of_parent[size_t(p)] < 0) throw std::logic_error("settle_pruning: a row's parent has no distribution");
    const float prob = probs[size_t(slot_of_parent[size_t(p)]) * size_t(vocab) + size_t(tokens[size_t(row)])];
    if (!alive[size_t(p)] || prob < sr.prune_threshold) alive[size_t(row)] = 0;
  }
}

std::vector<int> stream_sources(const StreamingRequest& sr, std::span<const int> rows,
                                std::span<const uint8_t> alive) {
  std::vector<int> src;
  if (sr.stream_rows.empty()) {
    for (int row : rows)
      if (alive[size_t(row)]) src.push_back(row);
  } else {
    for (int row : sr.stream_rows)
      if (alive[size_t(row)]) src.push_back(row);
  }
  return src;
}

}  // namespace specscope
