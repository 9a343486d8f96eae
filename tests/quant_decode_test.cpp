// kernels/quant_decode.h, the element and run decoders the CUDA kernels dequantize GGUF blocks with, checked on the CPU
// (so on machines without a GPU too) bit for bit against the engine's reference dequantizer, which is itself
// bit-exact with the gguf package (gguf_test): every element of random blocks of every type, random f16 scales
// including subnormal and negative ones, random mins.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "engine/formats/gguf_quant.h"
#include "engine/util/dtype.h"
#include "kernels/quant_decode.h"

using namespace specscope;
namespace qd = specscope::quant_decode;

namespace {

struct Case {
  qd::Block block;
  GgmlType ggml;
  const char* name;
};

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

class QuantDecode : public ::testing::TestWithParam<Case> {};

TEST_P(QuantDecode, EveryElementEqualsTheReferenceBitForBit) {
  const Case& c = GetParam();
  std::mt19937 rng(11);
  const int cols = 1024;
  const size_t rb = qd::row_bytes(c.block, cols);
  ASSERT_EQ(rb, size_t(cols / qd::block_elems(c.block)) * ggml_type_info(c.ggml).type_size);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<uint8_t> row(rb);
    for (auto& b : row) b = uint8_t(rng());
    // Keep the f16 fields finite (exponent < 31) so that NaN payloads do not enter the comparison.
    const int bb = qd::block_bytes(c.block);
    for (size_t blk = 0; blk < rb / size_t(bb); ++blk) {
      uint8_t* p = row.data() + blk * size_t(bb);
      for (int off : {0, 2, 208}) {
        if (off >= bb - 1) continue;
        const bool is_f16 = (c.block == qd::Block::Q6_K) ? off == 208
                            : (c.block == qd::Block::Q4_1 || c.block == qd::Block::Q5_1 ||
                               c.block == qd::Block::Q4_K || c.block == qd::Block::Q5_K)
                                ? off <= 2
                                : off == 0;
        if (is_f16 && (p[off + 1] & 0x7C) == 0x7C) p[off + 1] &= 0xBF;  // exponent 31 -> 15
      }
    }
    std::vector<float> ref(cols);
    dequantize_row(c.ggml, row.data(), ref.data(), cols);
    for (int i = 0; i < cols; ++i)
      ASSERT_EQ(bits(qd::element(row.data(), c.block, i)), bits(ref[size_t(i)]))
          << c.name << " trial " << trial << " element " << i << ": " << qd::element(row.data(), c.block, i)
          << " vs " << ref[size_t(i)];
    // decode_run: the same bits, a run of 32 at a time (the GPU's expert products).
    float run[32];
    for (int r = 0; r < cols / 32; ++r) {
      qd::decode_run(row.data(), c.block, r, run);
      for (int j = 0; j < 32; ++j)
        ASSERT_EQ(bits(run[j]), bits(ref[size_t(32 * r + j)])) << c.name << " trial " << trial << " run " << r << " element " << j;
    }
  }
}

// The half widening the decoder uses is engine/util/half_float.h's, checked for all 65536 halves against an
// ldexp oracle by matmul_test's DTypeConversion.F16ToF32AllValues.

INSTANTIATE_TEST_SUITE_P(Types, QuantDecode,
                         ::testing::Values(Case{qd::Block::Q8_0, GgmlType::Q8_0, "q8_0"},
                                           Case{qd::Block::Q4_0, GgmlType::Q4_0, "q4_0"},
                                           Case{qd::Block::Q4_1, GgmlType::Q4_1, "q4_1"},
                                           Case{qd::Block::Q5_0, GgmlType::Q5_0, "q5_0"},
                                           Case{qd::Block::Q5_1, GgmlType::Q5_1, "q5_1"},
                                           Case{qd::Block::Q4_K, GgmlType::Q4_K, "q4_k"},
                                           Case{qd::Block::Q5_K, GgmlType::Q5_K, "q5_k"},
                                           Case{qd::Block::Q6_K, GgmlType::Q6_K, "q6_k"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
