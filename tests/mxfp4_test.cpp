// MXFP4 (engine/formats/mxfp4.h): the scale as ggml's GGML_E8M0_TO_FP32_HALF gives it; the published safetensors'
// layout repacked into ggml's holds the same values; the GGUF reader's dequantizer gives each code's own value; a GGUF
// file's MXFP4 experts are read in place and a published checkpoint's repacked to the same bytes. (The integer kernels
// are held to the reference by quant_int8_test, and the whole model to transformers by model_parity_test and
// gguf_model_test.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/formats/gguf.h"
#include "engine/formats/gguf_quant.h"
#include "engine/formats/mxfp4.h"
#include "engine/formats/safetensors.h"
#include "engine/model/model.h"
#include "tests/test_support.h"

using namespace specscope;

namespace {

TEST(Mxfp4, HalfScaleIsTwoToTheExponentLess128) {
  for (int e = 0; e < 255; ++e) EXPECT_EQ(mxfp4_half_scale(uint8_t(e)), std::ldexp(1.f, e - 128)) << "e " << e;
}

TEST(Mxfp4, BothLayoutsHoldEachCodesValue) {
  std::mt19937 rng(7);
  const int n = 512;
  std::uniform_int_distribution<int> nib(0, 15), ex(0, 254);
  std::vector<uint8_t> ggml(static_cast<size_t>(n) * 17), codes(static_cast<size_t>(n) * 16), scales(static_cast<size_t>(n));
  std::vector<int> code(static_cast<size_t>(n) * 32);
  for (int k = 0; k < n; ++k) {
    int* c = code.data() + size_t(k) * 32;
    for (int j = 0; j < 32; ++j) c[j] = nib(rng);
    scales[size_t(k)] = ggml[size_t(k) * 17] = uint8_t(ex(rng));
    for (int j = 0; j < 16; ++j) {
      ggml[size_t(k) * 17 + 1 + j] = uint8_t(c[j] | c[j + 16] << 4);
      codes[size_t(k) * 16 + j] = uint8_t(c[2 * j] | c[2 * j + 1] << 4);
    }
  }
  std::vector<uint8_t> repacked(ggml.size());
  mxfp4_split_to_ggml(codes.data(), scales.data(), n, repacked.data());
  EXPECT_EQ(repacked, ggml);
  std::vector<float> a(size_t(n) * 32), c(a.size());
  mxfp4_ggml_to_f32(ggml.data(), n, a.data());
  dequantize_row(GgmlType::MXFP4, ggml.data(), c.data(), int64_t(n) * 32);
  for (size_t i = 0; i < a.size(); ++i) {
    const float want = float(kMxfp4Twice[code[i]]) * std::ldexp(1.f, scales[i / 32] - 128);
    ASSERT_EQ(a[i], want) << i;
    ASSERT_EQ(c[i], want) << i;
  }
}

// The GGUF fixture's experts (written by gguf-py's quantizer) are views of the file's own MXFP4 bytes, and the
// published-layout checkpoint of the same model (make_fixtures.py's gpt_oss_mxfp4) repacks to exactly those bytes.
TEST(Mxfp4, GgufExpertsAreTheFilesBytesAndThePublishedLayoutRepacksToThem) {
  const std::string path = test::fixture("gguf_models/gpt_oss_f32.mxfp4.gguf");
  const GgufFile g = GgufFile::open(path);
  const auto gguf = Model::load(path);
  const auto hf = Model::load(test::fixture("models/gpt_oss_mxfp4"));
  const auto& c = gguf->config();
  for (int l = 0; l < c.num_layers; ++l)
    for (const auto& [name, part] : {std::pair{"ffn_gate_exps", 0}, {"ffn_up_exps", 1}, {"ffn_down_exps", 2}}) {
      const GgufTensor* t = g.find_tensor("blk." + std::to_string(l) + "." + name + ".weight");
      ASSERT_NE(t, nullptr);
      ASSERT_EQ(t->type, GgmlType::MXFP4);
      const auto* file = static_cast<const uint8_t*>(t->data);
      size_t at = 0;
      for (size_t e = 0; e < gguf->weights().layers[size_t(l)].experts.size(); ++e) {
        const auto pick = [&](const ExpertWeights& X) -> const TensorView& {
          return part == 0 ? X.gate : part == 1 ? X.up : X.down;
        };
        const TensorView& v = pick(gguf->weights().layers[size_t(l)].experts[e]);
        const TensorView& h = pick(hf->weights().layers[size_t(l)].experts[e]);
        ASSERT_EQ(v.dtype, DType::MXFP4);
        ASSERT_EQ(h.dtype, DType::MXFP4);
        // read in place (the loader's own mapping of the file), not copied
        EXPECT_FALSE(v.loader_copy_in_huge_pages);
        EXPECT_TRUE(h.loader_copy_in_huge_pages);
        ASSERT_EQ(std::memcmp(v.data, file + at, v.nbytes()), 0) << name << " layer " << l << " expert " << e;
        ASSERT_EQ(std::memcmp(h.data, file + at, v.nbytes()), 0) << name << " layer " << l << " expert " << e;
        at += v.nbytes();
      }
      EXPECT_EQ(at, t->nbytes);
    }
}

}  // namespace
