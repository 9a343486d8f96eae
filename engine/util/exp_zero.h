#pragma once
// The engine's exp is exactly 0 below this argument (the smallest normal result's; -inf included): the CPU's vector
// exp (engine/cpu/vec_math.h) flushes there, attention relies on it for masked keys, and the GPU's softmax-like
// kernels (kernels/sampling.cu) flush at the same point so that a probability the CPU shows as 0 is 0 there too
// (CUDA's expf goes on with subnormal results down to about -103.9).
namespace specscope {

inline constexpr float kExpZeroBelow = -87.33654f;

}  // namespace specscope
