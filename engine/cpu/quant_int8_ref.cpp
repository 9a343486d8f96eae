// The portable reference of the integer dot kernels (quant_int8.h): plain loops that compute each block's exact
// integer dot from the block layouts as gguf_quant.h describes them, and the float formula of quant_int8.h in its
// stated order. The SIMD kernels are tested against it bit for bit; it is also the fallback on CPUs without AVX2.
#include <cmath>
#include <cstdint>

#include "engine/cpu/kquant_lanes.h"
#include "engine/cpu/quant_int8.h"
#include "engine/formats/gguf_k_scales.h"
#include "engine/formats/mxfp4.h"
#include "engine/util/half_float.h"

namespace specscope::cpu::detail {
namespace {

// t_b of quant_int8.h for real block b of a row against token t.
float block_term(Int8Type type, const uint8_t* row, int b, const ActQ8& a, int t) {
  int x[32];
  for (int i = 0; i < 32; ++i) x[i] = a.code(t, b, i);
  const int32_t xsum = a.sums32(t)[b];
  int32_t I = 0;
  switch (type) {
    case Int8Type::Q8_0: {
      const uint8_t* blk = row + size_t(b) * kQ8_0Bytes;
      for (int i = 0; i < 32; ++i) I += int32_t(int8_t(blk[2 + i])) * x[i];
      return load_half(blk) * float(I);
    }
    case Int8Type::Q4_0:
    case Int8Type::Q4_1:
    case Int8Type::Q5_0:
    case Int8Type::Q5_1: {
      // d (Q4_1, Q5_1: then m), the fifth bits of the 5-bit types (element i: bit i of a word), the nibbles.
      const NibbleBlock L = nibble_block(type);
      const uint8_t* blk = row + size_t(b) * size_t(L.bytes);
      const uint8_t* qs = blk + L.qs;
      uint32_t qh = 0;
      if (L.qh >= 0) __builtin_memcpy(&qh, blk + L.qh, 4);
      const int shift = int8_code_offset_shift(type), offset = shift < 0 ? 0 : 1 << shift;
      for (int i = 0; i < 16; ++i) {
        const int lo = int((qs[i] & 15) | ((qh >> i) & 1) << 4), hi = int((qs[i] >> 4) | ((qh >> (i + 16)) & 1) << 4);
        I += (lo - offset) * x[i] + (hi - offset) * x[i + 16];
      }
      const float fw = load_half(blk);
      return L.has_min ? std::fma(load_half(blk + 2), float(xsum), fw * float(I)) : fw * float(I);
    }
    case Int8Type::MXFP4: {  // each code's table value, offset by 16, times 2^(e - 128)
      const uint8_t* blk = row + size_t(b) * kMxfp4Bytes;
      for (int i = 0; i < 16; ++i)
        I += (kMxfp4Codes[blk[1 + i] & 15] - 16) * x[i] + (kMxfp4Codes[blk[1 + i] >> 4] - 16) * x[i + 16];
      return mxfp4_half_scale(blk[0]) * float(I);
    }
    case Int8Type::Q8_0_Lanes: {
      const uint8_t* unit = row + size_t(b / 8) * 272;
      for (int i = 0; i < 32; ++i) I += q8_0_lanes_code(unit, b % 8, i) * x[i];
      return load_half(unit + 2 * (b % 8)) * float(I);
    }
    case Int8Type::Q4_0_Lanes: {
      const uint8_t* unit = row + size_t(b / 8) * 144;
      for (int i = 0; i < 32; ++i) I += (q4_0_lanes_code(unit, b % 8, i) - 8) * x[i];
      return load_half(unit + 2 * (b % 8)) * float(I);
    }
    case Int8Type::Q4_K:
    case Int8Type::Q4_K_Lanes:
    case Int8Type::Q5_K:
    case Int8Type::Q5_K_Lanes: {
      const bool q5 = type == Int8Type::Q5_K || type == Int8Type::Q5_K_Lanes;
      const bool lanes = type == Int8Type::Q4_K_Lanes || type == Int8Type::Q5_K_Lanes;
      const uint8_t* blk = row + size_t(b / 8) * (q5 ? 176 : 144);
      const int j = b % 8;  // sub-block: low nibbles of 32-byte chunk j / 2 when j is even, high when odd
      int sc, mn;
      k4_scale_min(j, blk + 4, &sc, &mn);
      const uint8_t* qs = blk + (q5 ? 48 : 16) + 32 * (j / 2);
      for (int l = 0; l < 32; ++l) {
        int q;
        if (lanes) {
          q = q5 ? q5k_lanes_code(blk, j, l) : q4k_lanes_code(blk, j, l);
        } else {
          q = (j & 1) ? qs[l] >> 4 : qs[l] & 15;
          if (q5) q |= ((blk[16 + l] >> j) & 1) << 4;
        }
        I += q * x[l];
      }
      const float fw = load_half(blk) * float(sc), fm = load_half(blk + 2) * float(mn);
      return std::fma(-fm, float(xsum), fw * float(I));
    }
    case Int8Type::Q6_K:
    case Int8Type::Q6_K_Lanes: {
      const bool lanes = type == Int8Type::Q6_K_Lanes;
      const uint8_t* blk = row + size_t(b / 8) * 210;
      const int h = (b % 8) / 4, r = b % 4;  // 128-element half, 32-element run within it
      const uint8_t* ql = blk + 64 * h + 32 * (r & 1);
      const uint8_t* qh = blk + 128 + 32 * h;
      const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192 + 8 * h + 2 * r);
      for (int part = 0; part < 2; ++part) {
        int32_t s = 0;
        for (int l = 16 * part; l < 16 * part + 16; ++l) {
          const int q = lanes ? q6k_lanes_code(blk, b % 8, l)
                              : ((ql[l] >> (4 * (r >> 1))) & 15) | (((qh[l] >> (2 * r)) & 3) << 4);
          s += (q - 32) * x[l];
        }
        I += int32_t(sc[part]) * s;
      }
      return load_half(blk + 208) * float(I);
    }
  }
  return 0.f;
}

}  // namespace

void int8_rows_scalar(Int8Type type, const uint8_t* W, size_t row_bytes, const ActQ8& x, const float* bias, float* Y,
                      int m, int r0, int r1) {
  const int nb = x.k / kQ8Block, nbp = x.blocks();
  for (int r = r0; r < r1; ++r) {
    const uint8_t* row = W + size_t(r) * row_bytes;
    for (int t = 0; t < x.n; ++t) {
      float acc[kQ8Lanes] = {};
      for (int b = 0; b < nbp; ++b) {
        const float tb = b < nb ? block_term(type, row, b, x, t) : 0.f;
        acc[b % kQ8Lanes] = std::fma(x.ds(t)[b], tb, acc[b % kQ8Lanes]);
      }
      float s8[8], s4[4];
      for (int i = 0; i < 8; ++i) s8[i] = acc[i] + acc[i + 8];
      for (int i = 0; i < 4; ++i) s4[i] = s8[i] + s8[i + 4];
      const float s = (s4[0] + s4[2]) + (s4[1] + s4[3]);
      Y[size_t(t) * size_t(m) + size_t(r)] = s + (bias ? bias[r] : 0.f);
    }
  }
}

}  // namespace specscope::cpu::detail
