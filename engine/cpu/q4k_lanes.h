#pragma once
// Q4_K weights with each super-block's 4-bit codes in the order the AVX-512 VNNI kernel reads them
// (quant_int8_avx512.cpp), made once when the CPU copies a model's weights into huge pages (resident_weights.h) and
// read only by that kernel (TensorView::q4k_lanes; every other reader keeps the file's bytes in TensorView::data).
//
// Why: the kernel wants, for each 4-code step j (0..7) of a group of 16 sub-blocks, one zmm whose dword lane b holds
// codes 4j..4j+3 of sub-block b. ggml's layout stores sub-blocks 2c and 2c+1 of a super-block in the low and high
// nibbles of the same 32 bytes, so the kernel gathered those dwords with 16 cross-lane permutes per group of 512
// weights; in this layout it needs none. The 1B-shaped Q4_K_M file on the 2-core AMD EPYC, both forms in huge pages,
// alternated in one process (bench/kernel_ab.cpp 'default;lanes=0'): decode 1.13x faster on two threads (better in
// 15 of 16 rounds), 1.15x on one; forwards of 2 and 4 tokens 1.11x, 8 1.05x, 32 1.04x.
//
// Layout of one super-block (144 bytes, the same size): bytes 0-15 as ggml's (d, dmin, the 12 packed scale bytes);
// then 4 chunks of 32 bytes, chunk k (k = 0..3) holding 8 dwords, dword c for sub-block c: its byte i has code
// 4k + i of sub-block c in the low nibble and code 16 + 4k + i in the high nibble. A group's two super-blocks' chunk
// k side by side are then, masked, the kernel's step j = k and shifted right by 4, masked, step j = k + 4.
#include <cstddef>
#include <cstdint>

namespace specscope::cpu {

constexpr size_t kQ4KSuperBlockBytes = 144;

// One super-block from ggml's layout to the lanes layout; `out` may be `in`.
void q4k_super_block_to_lanes(const uint8_t* in, uint8_t* out);
// Every super-block of `count` in place.
void q4k_to_lanes_in_place(uint8_t* bytes, size_t count);

// Code `element` (0..31) of sub-block `sub_block` (0..7) of a super-block in the lanes layout (the scalar
// reference's reader; ggml's layout has its own in quant_int8_ref.cpp).
inline int q4k_lanes_code(const uint8_t* super_block, int sub_block, int element) {
  const int i = element % 16;
  const uint8_t byte = super_block[16 + 32 * (i / 4) + 4 * sub_block + i % 4];
  return element < 16 ? byte & 15 : byte >> 4;
}

}  // namespace specscope::cpu
