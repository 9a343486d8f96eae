#pragma once
// Dense weights requantized to 4 bits with one scale per 32 weights of a row, for drafters that share the CPU's
// caches with their target: 4.5 bits a weight, a quarter of bf16's bytes and about half of int8_panels.h's, so a small
// drafter's working set fits the cores' L2 (the shipped draft-small: 1.5 MB, ~0.74 MB a thread, against 2.7 MB as
// int8). The target still verifies every token: the drafts change with the quantization, the output does not. Asked
// for per drafter (`sps:draft-weights=int4`, which tree=auto also tries) or head (`head-weights=int4`).
//
// Weights: per row r and group g (k = 32g .. 32g + 31), as ggml's Q4_0 does: d = (the group's value of largest
// magnitude) / -8 rounded to f16, codes c = clamp(round(w / d) + 8, 0, 15), so w ~ (c - 8) d.
// Layout: panels of 16 output rows, each rounded up to whole cache lines: first the codes of every group, 256 bytes
// a group, as four 64-byte vectors v = 0..3 whose byte 4 r + i holds code (r, 32 g + 8 v + i) in its low nibble and
// code (r, 32 g + 8 v + 4 + i) in its high one; then every group's 16 f16 scales (32 bytes a group). Rows past m
// have scale 0; k past its end has code 8.
//
// Activations: per token, x quantized to signed codes round(x / sx) in [-127, 127], sx = max|x| / 127 (as
// int8_panels.h), and per group the sum of its codes. Each group's integer dot I_g = sum c * x_code is exact
// (vpdpbusd: unsigned codes times signed activations), and every path computes, in group order,
//   f = fma(float(I_g - 8 * sum_g x_code), d_rg, f)        from f = 0,
//   y = f * sx, or fma(f, sx, bias)
// so the AVX-512 kernel and the scalar reference give the same bits, and a token's outputs do not depend on which
// other tokens share the call (batch invariant).
#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/util/tensor.h"

namespace specscope::cpu {

struct Int4Panels {
  static constexpr int kRows = 16, kGroup = 32, kCodeBytes = 256, kGroupBytes = kCodeBytes + 2 * kRows;
  int m = 0, k = 0, groups = 0, panels = 0;  // groups = ceil(k / 32), panels = ceil(m / 16)
  size_t panel_bytes = 0;                   // groups * kGroupBytes rounded up to 64
  std::shared_ptr<void> storage;            // in huge pages (engine/util/huge_page_arena.h)
  const uint8_t* data = nullptr;            // panels * panel_bytes
  const uint8_t* codes(int p, int g) const { return data + size_t(p) * panel_bytes + size_t(g) * kCodeBytes; }
  const uint8_t* scales(int p, int g) const {
    return data + size_t(p) * panel_bytes + size_t(groups) * kCodeBytes + size_t(g) * 2 * kRows;
  }
  // Code (0..15) and scale of row r, column i (for the reference and tests).
  int code(int r, int i) const;
  float scale(int r, int g) const;
};

// Whether this CPU runs the int4 panel kernel (AVX-512 F/BW/VNNI, as the int8 panels).
bool int4_panels_supported();
// Requantizes a dense (f32/f16/bf16) weight [m, k]. Throws std::invalid_argument for other dtypes.
std::shared_ptr<const Int4Panels> pack_int4_panels(const TensorView& W);

// Y [n][m] = X [n][k] . W^T (+ bias) through the panels, on the engine's thread team. Needs int4_panels_supported().
void linear_int4_panels(const float* X, int n, const Int4Panels& w, const float* bias, float* Y);
// The same bits with plain loops (the yardstick for tests; runs anywhere).
void linear_int4_panels_reference(const float* X, int n, const Int4Panels& w, const float* bias, float* Y);

}  // namespace specscope::cpu
