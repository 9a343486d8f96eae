#pragma once
// One element of a GGUF block-quantized row, computed the way ggml's reference dequantizes it (each value an
// exact product d*sc*q, plus one correctly rounded add of the min where the format has one; see
// engine/formats/gguf_quant.h). Header-only and __host__ __device__: the CUDA kernels (kernels/dequant.cu)
// dequantize weight panels and embedding rows with it on the GPU, and tests/quant_decode_test.cpp checks it on
// the CPU, bit for bit, against the engine's reference dequantizer, so its logic is tested on machines without a
// GPU. Plain C++17, no CUDA headers, no intrinsics.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/formats/gguf_k_scales.h"
#include "engine/util/half_float.h"

namespace specscope::quant_decode {

enum class Block : int { Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K };

SPEC_HD int block_elems(Block b) { return b == Block::Q4_K || b == Block::Q5_K || b == Block::Q6_K ? 256 : 32; }

SPEC_HD int block_bytes(Block b) {
  switch (b) {
    case Block::Q8_0: return 34;
    case Block::Q4_0: return 18;
    case Block::Q4_1: return 20;
    case Block::Q5_0: return 22;
    case Block::Q5_1: return 24;
    case Block::Q4_K: return 144;
    case Block::Q5_K: return 176;
    case Block::Q6_K: return 210;
  }
  return 0;
}

SPEC_HD size_t row_bytes(Block b, int cols) { return size_t(cols / block_elems(b)) * size_t(block_bytes(b)); }

// Element i of a row of type b.
SPEC_HD float element(const uint8_t* row, Block b, int i) {
  const int be = block_elems(b);
  const uint8_t* blk = row + size_t(i / be) * size_t(block_bytes(b));
  const int j = i % be;
  switch (b) {
    case Block::Q8_0: return float(int8_t(blk[2 + j])) * load_half(blk);
    case Block::Q4_0: {
      const int q = j < 16 ? (blk[2 + j] & 0x0F) : (blk[2 + j - 16] >> 4);
      return float(q - 8) * load_half(blk);
    }
    case Block::Q4_1: {
      const int q = j < 16 ? (blk[4 + j] & 0x0F) : (blk[4 + j - 16] >> 4);
      return float(q) * load_half(blk) + load_half(blk + 2);
    }
    case Block::Q5_0:
    case Block::Q5_1: {
      const int off = b == Block::Q5_0 ? 2 : 4;  // qh follows d (and m)
      const uint32_t qh = uint32_t(blk[off]) | (uint32_t(blk[off + 1]) << 8) | (uint32_t(blk[off + 2]) << 16) |
                          (uint32_t(blk[off + 3]) << 24);
      const uint8_t* qs = blk + off + 4;
      const int lo = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
      const int q = lo | int(((qh >> j) & 1u) << 4);
      if (b == Block::Q5_0) return float(q - 16) * load_half(blk);
      return float(q) * load_half(blk) + load_half(blk + 2);
    }
    case Block::Q4_K:
    case Block::Q5_K: {
      const int sub = j / 32, l = j % 32, pair = sub / 2;  // 64-element chunk `pair`: low nibbles, then high
      int sc, m;
      k4_scale_min(sub, blk + 4, &sc, &m);
      const uint8_t* qs = blk + (b == Block::Q4_K ? 16 : 48) + 32 * pair;
      int q = (sub % 2 == 0) ? (qs[l] & 0x0F) : (qs[l] >> 4);
      if (b == Block::Q5_K) q += ((blk[16 + l] >> sub) & 1) ? 16 : 0;  // bit `sub` of qh[l]
      return load_half(blk) * float(sc) * float(q) - load_half(blk + 2) * float(m);
    }
    case Block::Q6_K: {
      const int half = j / 128, r = j % 128, run = r / 32, l = r % 32;  // element l of run `run` in this half
      const uint8_t* ql = blk + 64 * half;
      const uint8_t* qh = blk + 128 + 32 * half;
      const int8_t sc = int8_t(blk[192 + 8 * half + 2 * run + l / 16]);
      const int low = run == 0 ? (ql[l] & 0x0F) : run == 1 ? (ql[l + 32] & 0x0F) : run == 2 ? (ql[l] >> 4)
                                                                                           : (ql[l + 32] >> 4);
      const int q = (low | (((qh[l] >> (2 * run)) & 3) << 4)) - 32;
      return load_half(blk + 208) * float(sc) * float(q);
    }
  }
  return 0.f;
}

// Elements [32 run, 32 run + 32) of a row of type b into out, each the very bits element() gives: the run's scale
// (and min) decoded once instead of per element (every type's scales cover runs of 32, or 16 in Q6_K). Each product
// d*sc*q is exact in f32, so computing d*sc first changes nothing. The GPU's expert products decode a run per lane.
SPEC_HD void decode_run(const uint8_t* row, Block b, int run, float* out) {
  const int be = block_elems(b), runs_per_block = be / 32;
  const uint8_t* blk = row + size_t(run / runs_per_block) * size_t(block_bytes(b));
  const int r = run % runs_per_block;  // the run within its block (K-quants: 0..7)
  switch (b) {
    case Block::Q8_0: {
      const float d = load_half(blk);
      for (int j = 0; j < 32; ++j) out[j] = float(int8_t(blk[2 + j])) * d;
      return;
    }
    case Block::Q4_0: {
      const float d = load_half(blk);
      for (int j = 0; j < 16; ++j) out[j] = float((blk[2 + j] & 0x0F) - 8) * d, out[j + 16] = float((blk[2 + j] >> 4) - 8) * d;
      return;
    }
    case Block::Q4_1: {
      const float d = load_half(blk), m = load_half(blk + 2);
      for (int j = 0; j < 16; ++j) out[j] = float(blk[4 + j] & 0x0F) * d + m, out[j + 16] = float(blk[4 + j] >> 4) * d + m;
      return;
    }
    case Block::Q5_0:
    case Block::Q5_1: {
      const int off = b == Block::Q5_0 ? 2 : 4;
      const uint32_t qh = uint32_t(blk[off]) | (uint32_t(blk[off + 1]) << 8) | (uint32_t(blk[off + 2]) << 16) |
                          (uint32_t(blk[off + 3]) << 24);
      const uint8_t* qs = blk + off + 4;
      const float d = load_half(blk), m = b == Block::Q5_1 ? load_half(blk + 2) : 0.f;
      for (int j = 0; j < 32; ++j) {
        const int lo = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
        const int q = lo | int(((qh >> j) & 1u) << 4);
        out[j] = b == Block::Q5_0 ? float(q - 16) * d : float(q) * d + m;
      }
      return;
    }
    case Block::Q4_K:
    case Block::Q5_K: {
      int sc, m;
      k4_scale_min(r, blk + 4, &sc, &m);
      const float dsc = load_half(blk) * float(sc), dm = load_half(blk + 2) * float(m);
      const uint8_t* qs = blk + (b == Block::Q4_K ? 16 : 48) + 32 * (r / 2);
      for (int l = 0; l < 32; ++l) {
        int q = (r % 2 == 0) ? (qs[l] & 0x0F) : (qs[l] >> 4);
        if (b == Block::Q5_K) q += ((blk[16 + l] >> r) & 1) ? 16 : 0;
        out[l] = dsc * float(q) - dm;
      }
      return;
    }
    case Block::Q6_K: {
      const int half = r / 4, run_in_half = r % 4;  // element() names these `half` and `run`
      const uint8_t* ql = blk + 64 * half;
      const uint8_t* qh = blk + 128 + 32 * half;
      const float d = load_half(blk + 208);
      const float dsc[2] = {d * float(int8_t(blk[192 + 8 * half + 2 * run_in_half])),
                            d * float(int8_t(blk[192 + 8 * half + 2 * run_in_half + 1]))};
      for (int l = 0; l < 32; ++l) {
        const int low = run_in_half == 0   ? (ql[l] & 0x0F)
                        : run_in_half == 1 ? (ql[l + 32] & 0x0F)
                        : run_in_half == 2 ? (ql[l] >> 4)
                                           : (ql[l + 32] >> 4);
        const int q = (low | (((qh[l] >> (2 * run_in_half)) & 3) << 4)) - 32;
        out[l] = dsc[l / 16] * float(q);
      }
      return;
    }
  }
}

}  // namespace specscope::quant_decode
