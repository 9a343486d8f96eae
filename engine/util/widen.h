#pragma once
// Float weights widened to f32 without SIMD: f32 copied, f16 through a 65536-entry table (the bit-by-bit
// f16_to_f32 is far too slow for whole rows), bf16 by a shift. Widening is exact, so this gives the very floats
// cpu::convert_to_f32's SIMD kernels give (tests/matmul_test.cpp compares them). Other types: nothing is written.
// The CPU backend's scalar kernels use it, and so do the load-time merges (LoRA) and the fuzz targets, which build
// without the kernels.
#include <cstddef>

#include "engine/util/dtype.h"

namespace specscope {

void widen_to_f32(DType t, const void* src, float* dst, size_t count);

}  // namespace specscope
