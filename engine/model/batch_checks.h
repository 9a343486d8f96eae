#pragma once
// The checks every backend applies to a Batch before running it (batches can come from user-supplied trees and
// options): size, context room, token ids, positions, mask shape. Throws InputError.
#include <cstdint>
#include <vector>

#include "engine/model/config.h"
#include "engine/model/forward.h"

namespace specscope {

// Returns each row's position (the batch's own, or n_past, n_past + 1, ... when it gives none).
std::vector<int32_t> checked_positions(const Batch& b, const ModelConfig& c, int n_past, int n_ctx);

}  // namespace specscope
