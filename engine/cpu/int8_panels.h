#pragma once
// Dense weights requantized to 8 bits with one scale per output row, for small models that share the CPU's cache
// with another (a speculative drafter beside its target): half the bytes of bf16, and vpdpbusd adds four products
// of 16 rows per instruction where vdpbf16ps adds two (on AVX2, vpmaddubsw and vpmaddwd: 8 rows' four products for
// three instructions where widening bf16 costs two for 8 weights before the FMA). Asked for per drafter (`sps:draft-weights=int8`, which
// tree=auto also tries, runs/tree_tuner.cpp; one copy per model, Model::requantized_weights; weight_form.h): the
// drafter's outputs change by the quantization, its drafts with them; the target still verifies every token, so the
// output does not.
//
// Layout: panels of 16 output rows; panel p, quad j (k = 4j .. 4j + 3), lane r % 16 holds the four codes of row r as
// one dword: codes[((p * quads + j) * 16 + r % 16) * 4 + i] = w_code(r, 4j + i). Rows past m and k past the end are
// zero. A row's codes are round(w / scale), scale = max|w| / 127.
//
// Activations: per token, x quantized to round(x / sx) in [-127, 127] with sx = max|x| / 127, stored + 128 as the
// unsigned bytes vpdpbusd takes. Each output is then the exact integer sum I = sum_k w_code (x_code + 128) -
// 128 sum_k w_code, and y = (float(I) * scale_r) * sx_t, or fma(float(I) * scale_r, sx_t, bias), on every path (the
// AVX-512 kernel and the scalar reference give the same bits; any token count gives the same bits for a token: batch
// invariant).
#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/util/tensor.h"

namespace specscope::cpu {

struct Int8Panels {
  int m = 0, k = 0, quads = 0, panels = 0;  // quads = ceil(k / 4), panels = ceil(m / 16)
  std::shared_ptr<void> storage;           // in huge pages (engine/util/huge_page_arena.h)
  const int8_t* codes = nullptr;           // panels * quads * 64 bytes
  const float* scale = nullptr;            // [panels * 16]
  const int32_t* sum = nullptr;            // [panels * 16] sum of each row's codes
  const int8_t* panel(int p) const { return codes + size_t(p) * size_t(quads) * 64; }
};

// Whether this CPU runs an int8 panel kernel (AVX-512 F/BW/VNNI, or AVX2 + FMA: vpmaddubsw on |w| and the
// activation codes with w's sign, the same bits); where it does not, requantizing is refused.
bool int8_panels_supported();
// Requantizes a dense (f32/f16/bf16) weight [m, k]. Throws std::invalid_argument for other dtypes.
std::shared_ptr<const Int8Panels> pack_int8_panels(const TensorView& W);

// Y [n][m] = X [n][k] . W^T (+ bias) through the panels, on the engine's thread team. Needs int8_panels_supported().
void linear_int8_panels(const float* X, int n, const Int8Panels& w, const float* bias, float* Y);
// The same bits with plain loops (the yardstick for tests; runs anywhere).
void linear_int8_panels_reference(const float* X, int n, const Int8Panels& w, const float* bias, float* Y);

}  // namespace specscope::cpu
