#pragma once
// The row-level decisions of a Speculative Streaming forward (forward.h's StreamingRequest; Bhendawade et al.,
// arXiv 2402.11131): whether a request fits the model and batch, which rows early-exit pruning drops, and which rows
// get streams. Shared by the CPU backend (engine/model/cpu_streaming.cpp) and the CUDA one
// (kernels/cuda_streaming.cpp), so that both decide the same rows; only the arithmetic is each backend's own.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/config.h"
#include "engine/model/forward.h"

namespace specscope {

// Throws InputError for a request an n-row batch of this model cannot run (stream count, MSA layers, stream rows,
// parent rows, pruning after the streams start).
void check_streaming(const StreamingRequest& sr, const ModelConfig& c, int n);

// The distinct parents of `rows` (batch rows in batch order), in first-seen order: the rows whose early-exit
// distributions decide pruning. Empty when the request has no parent rows.
std::vector<int> prune_parents(const StreamingRequest& sr, std::span<const int> rows);

// Pruning, once the parents' early-exit distributions are known: probs holds one softmax over the vocabulary
// (vocab floats) per entry of `parents`, in that order. Each of `rows` (batch order, so a parent is settled before
// its children) is pruned, alive[row] = 0, when its parent is pruned or gives its token less than the threshold.
void settle_pruning(const StreamingRequest& sr, std::span<const int32_t> tokens, std::span<const int> rows,
                    std::span<const int> parents, const float* probs, int vocab, std::vector<uint8_t>& alive);

// Whether batch row `row` sees batch row `col` in attention: `col` is not pruned (alive) and the batch's mask allows
// it (n x n, row-major), or, without a mask, causality does. The one rule every backend's attention masks follow.
inline bool batch_row_sees(int row, int col, int n, const uint8_t* mask, std::span<const uint8_t> alive) {
  return alive[size_t(col)] && (mask ? mask[size_t(row) * size_t(n) + size_t(col)] != 0 : col <= row);
}

// The rows that get streams, as batch rows: every alive row of `rows` in order when the request lists none, else the
// listed rows that are still alive, in the listed order.
std::vector<int> stream_sources(const StreamingRequest& sr, std::span<const int> rows,
                                std::span<const uint8_t> alive);

}  // namespace specscope
