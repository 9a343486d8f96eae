#pragma once
// Q4_K, Q5_K and Q6_K weights with each super-block's codes in the order the integer dot kernels read them
// (quant_int8.h), made once when the CPU copies a model's weights into huge pages (resident_weights.h) and read only
// by those kernels (TensorView::lanes; every other reader, the exact path included, keeps the file's bytes in
// TensorView::data).
//
// Why: the kernels want, for each 4-code step j (0..7) of a group of 16 blocks of 32, one vector whose dword lane b
// holds codes 4j..4j+3 of block b (a zmm for the group in quant_int8_avx512.cpp, a ymm per super-block in
// quant_int8_ymm.h). ggml's layouts interleave blocks within bytes (Q4_K, Q5_K: blocks 2c and 2c+1 in
// the low and high nibbles of the same 32 bytes, Q5_K's fifth bits of all 8 in one; Q6_K: four blocks' low nibbles
// over two 32-byte runs and their high bits in one), so the kernels gathered those dwords with 16-24 shuffles per
// group of 512 weights; in these layouts they need none. The 1B-shaped files on the 2-core AMD EPYC, both forms in
// huge pages, alternated in one process (bench/kernel_ab.cpp 'default;lanes=0';
// bench/results/cpu_kquant_lanes_2026-12-01/): Q4_K_M decode 1.00-1.13x faster on two threads (nothing when memory
// is fast and the step memory-bound), 1.14-1.21x on one, 1.15x on the AVX2 kernels; Q5_K_M 1.06-1.08x and
// 1.29-1.33x; forwards of 2-32 tokens up to 1.28x.
//
// Both layouts keep the super-block's size and its scale bytes where ggml has them; only the codes move.
// - Q4_0 (since the forty-ninth session; a unit of 8 blocks, 144 bytes, as a Q4_K super-block): the 8 blocks' f16 d
//   in bytes 0-15, then their codes in bytes 16-143 as Q4_K's. Only for tensors whose rows are whole units (a
//   multiple of 256 long: tensor_takes_lanes), so that a unit never holds two rows' blocks. Why: Q4_0 was the one
//   common type the kernels still gathered with to_lanes' shuffles, and four Qwen3-30B-A3B layers decoded at 0.94x
//   llama-bench on the Zen 4 host (its matrix products at 60% of the memory bound, Q4_K_M's at 86%).
// - Q8_0 (the same session; a unit of 8 blocks, 272 bytes): the 8 blocks' f16 d in bytes 0-15, then 8 steps of 32
//   bytes, step j's dword c holding codes 4j..4j+3 of block c. Only for rows a multiple of 256 long, as Q4_0.
// - Q4_K (144 bytes): bytes 0-15 as ggml's (d, dmin, the 12 packed scale bytes); then 4 chunks of 32 bytes, chunk k
//   (k = 0..3) holding 8 dwords, dword c for block c: its byte i has code 4k + i of block c in the low nibble and
//   code 16 + 4k + i in the high nibble.
// - Q5_K (176 bytes): bytes 0-15 as ggml's; the fifth bits in bytes 16-47, dword c, byte i holding in bit s the
//   fifth bit of code 4s + i of block c (s = 0..7); the low nibbles in bytes 48-175 as Q4_K's codes.
// - Q6_K (210 bytes, blocks of 32 = ggml's 128-element half h, 32-element run r: block 4h + r): the low nibbles in
//   bytes 0-127 as Q4_K's codes above; the high 2 bits in bytes 128-191, 2 chunks of 32 bytes, chunk h (h = 0, 1),
//   dword c, byte i holding in bits 2s..2s+1 the high bits of code 4 (4h + s) + i of block c (s = 0..3); bytes
//   192-209 (the 16 int8 scales, f16 d) as ggml's.
// A group's two super-blocks' chunk k side by side, masked, are then the kernel's step j = k and, shifted right by 4,
// step j = k + 4 (Q5_K: with bit j of the fifth bits above them; Q6_K: with the high bits of chunk j / 4, shifted by
// 2 (j % 4)).
#include <cstddef>
#include <cstdint>

#include "engine/util/dtype.h"

namespace specscope::cpu {

// Bytes of a super-block of a type with a lanes layout (the unit of 8 blocks of Q4_0: 144, of Q8_0: 272; Q4_K: 144,
// Q5_K: 176, Q6_K: 210); 0 for the others.
size_t lanes_super_block_bytes(DType t);
// Whether a tensor of type t with rows of `row_elements` gets a lanes copy.
bool tensor_takes_lanes(DType t, int64_t row_elements);
void q4_0_unit_to_lanes(const uint8_t* in, uint8_t* out);
void q8_0_unit_to_lanes(const uint8_t* in, uint8_t* out);
// One super-block from ggml's layout to the lanes layout; `out` may be `in`.
void q4k_super_block_to_lanes(const uint8_t* in, uint8_t* out);
void q5k_super_block_to_lanes(const uint8_t* in, uint8_t* out);
void q6k_super_block_to_lanes(const uint8_t* in, uint8_t* out);
// `count` super-blocks of type t (Q4_0's units, Q4_K, Q5_K or Q6_K) from ggml's layout at `in` to the lanes layout at `out`
// (`out` may be `in`).
void to_lanes(DType t, const uint8_t* in, uint8_t* out, size_t count);

// Code `element` (0..31) of block `block` (0..7) of a super-block in the lanes layout, as the scalar reference reads
// it (ggml's layouts have their own readers in quant_int8_ref.cpp). Q6_K: the unsigned 6-bit code (0..63).
inline int lanes_low4(const uint8_t* codes, int block, int element) {
  const int i = element % 16;
  const uint8_t byte = codes[32 * (i / 4) + 4 * block + i % 4];
  return element < 16 ? byte & 15 : byte >> 4;
}
inline int q4_0_lanes_code(const uint8_t* unit, int block, int element) {  // the nibble, 0..15 (code + 8)
  return lanes_low4(unit + 16, block, element);
}
inline int q8_0_lanes_code(const uint8_t* unit, int block, int element) {  // the signed code
  return int8_t(unit[16 + 32 * (element / 4) + 4 * block + element % 4]);
}
inline int q4k_lanes_code(const uint8_t* super_block, int block, int element) {
  return lanes_low4(super_block + 16, block, element);
}
inline int q5k_lanes_code(const uint8_t* super_block, int block, int element) {
  const uint8_t fifth = super_block[16 + 4 * block + element % 4];
  return lanes_low4(super_block + 48, block, element) | ((fifth >> (element / 4)) & 1) << 4;
}
inline int q6k_lanes_code(const uint8_t* super_block, int block, int element) {
  const int j = element / 4, i = element % 4;  // the kernel's step and the byte within its dword
  const uint8_t high = super_block[128 + 32 * (j / 4) + 4 * block + i];
  return lanes_low4(super_block, block, element) | ((high >> (2 * (j % 4))) & 3) << 4;
}

}  // namespace specscope::cpu
