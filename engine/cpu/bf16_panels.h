#pragma once
// Internal to engine/cpu: bf16 weights repacked for the AVX512-BF16 kernel (matmul_bf16dot.cpp) and the widening
// kernel of CPUs without it (bf16_widen_panels.h, which reads a panel in halves of 8 rows on AVX2) so that a product needs
// no horizontal sums. Row-major weights put consecutive k of one output row in a vector's lanes, so every (output row, token) of a
// product ends in a 16-to-1 sum: at k = 384 (the default base) about a fifth of the work of an 8-token step. In the
// panel layout the lanes are 16 output rows: element (r, k) of W sits at
//   panel r / 16, slot k / 2, lane r % 16, half k % 2   ->   data[((r / 16) * pairs + k / 2) * 32 + (r % 16) * 2 + k % 2]
// so one vdpbf16ps adds two k of 16 rows against a broadcast pair of one token's activations, and the accumulator
// already holds 16 outputs. Rows past m and the element past an odd k are zero.
//
// Only narrow weights are repacked (k < kPanelMaxK) for the vdpbf16ps and widening kernels: the horizontal sums are a
// share of the work that shrinks as 1/k, and above it a second copy of the weights (the mapping stays) would cost
// memory for a few percent. On the AMX tiles wider ones are repacked too (matmul.cpp, bf16_repacked): there the
// panels turn an 8-16-token forward into a one-token one's time.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/util/tensor.h"

namespace specscope::cpu::detail {

inline constexpr int kPanelRows = 16;
inline constexpr int kPanelMaxK = 2048;

struct Bf16Panels {
  int m = 0, k = 0, pairs = 0, panels = 0;              // pairs = ceil(k / 2), panels = ceil(m / 16)
  std::shared_ptr<void> storage;  // panels * pairs * 32 elements, 64-byte aligned, in huge pages where the OS allows
  uint16_t* data = nullptr;
  const uint16_t* panel(int p) const { return data + size_t(p) * size_t(pairs) * 32; }
};

// Packs bf16 W [m, k] (row-major) into panels.
std::shared_ptr<const Bf16Panels> pack_bf16_panels(const uint16_t* W, int m, int k);

// The panels of a bf16 weight, packed on first use and kept while the memory W.data points into lives (tracked
// through W.keep_alive, so a freed mapping whose address is reused is never mistaken for the old one). Null when W
// stays row-major: not bf16 or no owner to track. Which widths are packed is the caller's choice (matmul.cpp's
// bf16_repacked: below kPanelMaxK, and wider ones on the AMX tiles). Thread-safe.
const Bf16Panels* bf16_panels_for(const TensorView& W);

}  // namespace specscope::cpu::detail
