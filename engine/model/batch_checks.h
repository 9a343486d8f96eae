#pragma once
// The checks every backend applies to a Batch before running it (batches can come from user-supplied trees and
// options): size, context room, token ids, positions, mask shape, hidden-state taps. Throws InputError.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/config.h"
#include "engine/model/forward.h"

namespace specscope {

// Returns each row's position (the batch's own, or n_past, n_past + 1, ... when it gives none).
std::vector<int32_t> checked_positions(const Batch& b, const ModelConfig& c, int n_past, int n_ctx);

// Context::keep()'s contract: a forward came first (last_batch_start >= 0), and `rows` are rows of that batch in
// increasing order (so compaction only moves entries to lower slots). Throws logic_error / out_of_range /
// invalid_argument: these rows come from the engine, never from a user.
void check_keep_rows(std::span<const int> rows, int last_batch_start, int last_batch_size);

// Batch::probe_start / probe_tokens against `logit_rows` logit rows and `vocab`: empty, or logit_rows + 1
// nondecreasing offsets from 0 to probe_tokens.size() with every token an id. Throws InputError. The backends that
// summarize check this before sending probes to a device.
void check_probes(const Batch& b, int logit_rows, int vocab);

}  // namespace specscope
