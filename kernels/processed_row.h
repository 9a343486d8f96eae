#pragma once
// What kernels/processed_rows.cu returns for a row (plain C++: the kernels' references and the backend share it).
#include <cstdint>

namespace specscope::cuda {

// The most tokens process_row returns (and the most candidates it orders).
inline constexpr int kProcessedRowCap = 2048;

// One row's processed distribution: count kept tokens, ids and probabilities in process_logits's order; count -1
// when the kernel cannot bound the kept set to kProcessedRowCap candidates (temperature alone over a larger
// vocabulary, a top-p or min-p that keeps thousands, non-finite logits): the caller processes the row itself.
struct ProcessedRow {
  int32_t count;
  int32_t ids[kProcessedRowCap];
  float probs[kProcessedRowCap];
};

}  // namespace specscope::cuda
