// MXFP4 (engine/formats/mxfp4.h): the scale as ggml's GGML_E8M0_TO_FP32_HALF gives it, both layouts (ggml's and the
// published safetensors') read to the same values, and the Q5_0 blocks SpecScope computes with holding exactly those
// values, checked through the engine's reference Q5_0 dequantizer; the GGUF fixture's MXFP4 experts against the
// gguf package's dequantization (expected.json's reference logits are computed from it: gguf_model_test).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/formats/gguf.h"
#include "engine/formats/gguf_quant.h"
#include "engine/formats/mxfp4.h"
#include "engine/model/model.h"
#include "tests/test_support.h"

using namespace specscope;

namespace {

TEST(Mxfp4, HalfScaleIsTwoToTheExponentLess128) {
  for (int e = 0; e < 255; ++e) EXPECT_EQ(mxfp4_half_scale(uint8_t(e)), std::ldexp(1.f, e - 128)) << "e " << e;
}

// Random blocks in ggml's layout, and the same codes in the published one.
struct Blocks {
  std::vector<uint8_t> ggml, codes, scales;
};
Blocks random_blocks(int n, std::mt19937& rng, int e_lo, int e_hi) {
  Blocks b;
  b.ggml.resize(size_t(n) * 17);
  b.codes.resize(size_t(n) * 16);
  b.scales.resize(size_t(n));
  std::uniform_int_distribution<int> nib(0, 15), ex(e_lo, e_hi);
  for (int k = 0; k < n; ++k) {
    uint8_t c[32];
    for (auto& x : c) x = uint8_t(nib(rng));
    const uint8_t e = uint8_t(ex(rng));
    b.ggml[size_t(k) * 17] = e;
    b.scales[size_t(k)] = e;
    for (int j = 0; j < 16; ++j) {
      b.ggml[size_t(k) * 17 + 1 + j] = uint8_t(c[j] | c[j + 16] << 4);
      b.codes[size_t(k) * 16 + j] = uint8_t(c[2 * j] | c[2 * j + 1] << 4);
    }
  }
  return b;
}

TEST(Mxfp4, Q5_0CopiesHoldTheSameValuesInBothLayouts) {
  std::mt19937 rng(7);
  const int n = 512;
  const Blocks b = random_blocks(n, rng, 104, 143);  // every scale an f16 power of two, subnormals included
  ASSERT_TRUE(mxfp4_ggml_fits_q5_0(b.ggml.data(), n));
  ASSERT_TRUE(mxfp4_scales_fit_q5_0(b.scales.data(), n));
  std::vector<float> want(size_t(n) * 32), from_split(want.size()), q5(want.size()), q5_split(want.size());
  mxfp4_ggml_to_f32(b.ggml.data(), n, want.data());
  mxfp4_split_to_f32(b.codes.data(), b.scales.data(), n, from_split.data());
  std::vector<uint8_t> blocks(size_t(n) * 22), blocks_split(blocks.size());
  mxfp4_ggml_to_q5_0(b.ggml.data(), n, blocks.data());
  mxfp4_split_to_q5_0(b.codes.data(), b.scales.data(), n, blocks_split.data());
  dequantize_row(GgmlType::Q5_0, blocks.data(), q5.data(), int64_t(n) * 32);
  dequantize_row(GgmlType::Q5_0, blocks_split.data(), q5_split.data(), int64_t(n) * 32);
  EXPECT_EQ(blocks, blocks_split);
  for (size_t i = 0; i < want.size(); ++i) {
    // the element's own value: its code's doubled E2M1 value times 2^(e - 128)
    const size_t k = i / 32, j = i % 32;
    const uint8_t byte = b.ggml[k * 17 + 1 + j % 16];
    const int code = j < 16 ? byte & 0x0F : byte >> 4;
    ASSERT_EQ(want[i], float(kMxfp4Twice[code]) * std::ldexp(1.f, b.ggml[k * 17] - 128)) << i;
    ASSERT_EQ(from_split[i], want[i]) << i;
    ASSERT_EQ(q5[i], want[i]) << i;
  }
  // And the GGUF reader's dequantizer for the type.
  std::vector<float> row(want.size());
  dequantize_row(GgmlType::MXFP4, b.ggml.data(), row.data(), int64_t(n) * 32);
  EXPECT_EQ(row, want);
}

TEST(Mxfp4, ScalesPastF16sRangeDoNotFitQ5_0) {
  for (int e : {0, 103, 144, 254}) {
    const uint8_t s = uint8_t(e);
    uint8_t block[17] = {s};
    EXPECT_FALSE(mxfp4_scales_fit_q5_0(&s, 1)) << e;
    EXPECT_FALSE(mxfp4_ggml_fits_q5_0(block, 1)) << e;
  }
}

// The fixture's MXFP4 experts (written by gguf-py's quantizer) as the model binds them: every expert's gate, up and down
// rows are Q5_0 copies whose values are the file's MXFP4 values, element for element.
TEST(Mxfp4, GgufExpertsBindAsQ5_0OfTheFilesValues) {
  const std::string path = test::fixture("gguf_models/gpt_oss_f32.mxfp4.gguf");
  const GgufFile g = GgufFile::open(path);
  const auto model = Model::load(path);
  const auto& c = model->config();
  for (int l = 0; l < c.num_layers; ++l)
    for (const auto& [name, part] : {std::pair{"ffn_gate_exps", 0}, {"ffn_up_exps", 1}, {"ffn_down_exps", 2}}) {
      const GgufTensor* t = g.find_tensor("blk." + std::to_string(l) + "." + name + ".weight");
      ASSERT_NE(t, nullptr);
      ASSERT_EQ(t->type, GgmlType::MXFP4);
      const std::vector<float> want = g.dequantize(*t);
      size_t at = 0;
      for (const auto& X : model->weights().layers[size_t(l)].experts) {
        const TensorView& v = part == 0 ? X.gate : part == 1 ? X.up : X.down;
        ASSERT_EQ(v.dtype, DType::Q5_0);
        std::vector<float> got(size_t(v.numel()));
        dequantize_row(GgmlType::Q5_0, v.data, got.data(), v.numel());
        for (float x : got) ASSERT_EQ(x, want[at++]) << name << " layer " << l;
      }
      EXPECT_EQ(at, want.size());
    }
}

}  // namespace
