#pragma once
// Internal to engine/cpu/matmul*.cpp: bf16 weights through Intel AMX (matmul_amx.cpp), on CPUs with AMX-BF16 whose
// kernel grants this process the tile state.
#include <cstddef>
#include <cstdint>

namespace specscope::cpu::detail {

struct Bf16Panels;

// True when this CPU has AMX-BF16 and the kernel let this process use the tiles (arch_prctl, asked once).
bool amx_bf16_usable();
// Whether the AMX kernel computes a weight of these panels: their pair slots a whole number of 16, a tile's depth
// (k of 32j - 1 or 32j: an odd k's last pair is zero-padded in the panels and the activations alike); other widths
// keep vdpbf16ps, decided by the weight alone so that every n takes the same path.
bool amx_takes(const Bf16Panels& w);
inline bool amx_takes_k(int k) { return (k + 1) / 2 % 16 == 0; }  // the same, from the weight's width
// `iterations` x 4 tile multiply-adds of 16 x 16 x 32 (the roofline's peak for this path); only where usable.
float amx_peak_loop(int iterations);
// Y[:, 16 p0 : 16 p1) = xb W^T (+ bias) from W's panels; the same inputs and contract as panels_bf16dot.
void panels_amx(const uint16_t* xb, size_t kp, int n, const Bf16Panels& w, const float* bias, float* Y, int p0, int p1);

}  // namespace specscope::cpu::detail
