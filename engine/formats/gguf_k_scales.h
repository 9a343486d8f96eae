#pragma once
// The 6-bit scales and mins of ggml's Q4_K and Q5_K super-blocks, shared by the reference dequantizer
// (gguf_quant.cpp), the fused AVX-512 kernels (engine/cpu/quant_dot_avx512.cpp) and the CUDA block decoder
// (kernels/quant_decode.h), so that the three cannot drift apart. Plain C++17, compiled by nvcc as well.
#include <cstdint>

#include "engine/util/host_device.h"

namespace specscope {

// Sub-block j (0..7) of a super-block: its scale and min from the 12 packed bytes q. Bytes 0-3 hold scales
// 0-3 in their low 6 bits, bytes 4-7 mins 0-3; sub-blocks 4-7 keep their low 4 bits in bytes 8-11 (scale low
// nibble, min high nibble) and their top 2 bits in the top bits of bytes 0-3 (scales) and 4-7 (mins).
SPEC_HD void k4_scale_min(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

}  // namespace specscope
