#include "engine/model/batch_checks.h"

#include <stdexcept>
#include <string>

#include "engine/util/error.h"

namespace specscope {

std::vector<int32_t> checked_positions(const Batch& b, const ModelConfig& c, int n_past, int n_ctx) {
  const int n = b.size();
  if (n == 0) throw InputError("batch", "empty batch");
  if (n_past + n > n_ctx)
    throw InputError("context", "the sequence (" + std::to_string(n_past + n) + " tokens) exceeds the context of " +
                                    std::to_string(n_ctx) + " tokens");
  if (!b.positions.empty() && int(b.positions.size()) != n)
    throw InputError("batch", "positions and tokens differ in length");
  if (!b.mask.empty() && b.mask.size() != size_t(n) * n) throw InputError("batch", "mask is not n x n");
  // A tap of a layer the model lacks would come back empty on the CPU and as whatever device memory held on CUDA.
  for (const auto& t : b.taps)
    if (t.kind == HiddenTap::LayerInput && (t.layer < 0 || t.layer >= c.num_layers))
      throw InputError("batch", "hidden-state tap of layer " + std::to_string(t.layer) + " (the model has " +
                                    std::to_string(c.num_layers) + " layers)");
  std::vector<int32_t> pos(n);
  for (int i = 0; i < n; ++i) {
    pos[i] = b.positions.empty() ? n_past + i : b.positions[i];
    if (b.tokens[i] < 0 || b.tokens[i] >= c.vocab_size)
      throw InputError("batch", "token id " + std::to_string(b.tokens[i]) + " outside the vocabulary");
    if (pos[i] < 0 || pos[i] >= c.max_position_embeddings * 64)  // long-context models may exceed the config
      throw InputError("batch", "position out of range");
  }
  return pos;
}

void check_keep_rows(std::span<const int> rows, int last_batch_start, int last_batch_size) {
  if (last_batch_start < 0) throw std::logic_error("keep() without a preceding forward()");
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r] < 0 || rows[r] >= last_batch_size) throw std::out_of_range("keep(): row outside the last batch");
    if (r > 0 && rows[r] <= rows[r - 1]) throw std::invalid_argument("keep(): rows must increase");
  }
}

void check_probes(const Batch& b, int logit_rows, int vocab) {
  if (b.probe_start.empty()) {
    if (!b.probe_tokens.empty()) throw InputError("batch", "probe tokens without probe offsets");
    return;
  }
  if (int(b.probe_start.size()) != logit_rows + 1 || b.probe_start.front() != 0 ||
      size_t(b.probe_start.back()) != b.probe_tokens.size())
    throw InputError("batch", "probe offsets do not span the probe tokens over the logit rows");
  for (size_t k = 1; k < b.probe_start.size(); ++k)
    if (b.probe_start[k] < b.probe_start[k - 1]) throw InputError("batch", "probe offsets decrease");
  for (int32_t t : b.probe_tokens)
    if (t < 0 || t >= vocab) throw InputError("batch", "probe token id " + std::to_string(t) + " outside the vocabulary");
}

}  // namespace specscope
