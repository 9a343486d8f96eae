// Int8 per-row weight panels (engine/cpu/int8_panels.h): the AVX-512 VNNI and AVX2 kernels give the scalar reference's bits,
// a token's outputs do not depend on the batch, the error against the f32 product stays within the stated bound, and
// a context asked for int8 weights uses them while another context of the same model does not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/cpu/int8_panels.h"
#include "engine/cpu/matmul.h"
#include "engine/model/model.h"
#include "tests/panel_test_support.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using test::DenseWeight;
using test::normal_floats;

TEST(Int8Panels, KernelEqualsReferenceAndIsBatchInvariant) {
  if (!cpu::int8_panels_supported()) GTEST_SKIP() << "neither AVX-512 VNNI nor AVX2: the int8 panels are never used here";
  test::expect_kernel_equals_reference_and_batch_invariant(
      [](const TensorView& W) {
        const auto p = cpu::pack_int8_panels(W);
        return test::PanelPair{
            [p](const float* X, int n, const float* b, float* Y) { cpu::linear_int8_panels(X, n, *p, b, Y); },
            [p](const float* X, int n, const float* b, float* Y) { cpu::linear_int8_panels_reference(X, n, *p, b, Y); }};
      },
      11);
}

TEST(Int8Panels, ErrorAgainstTheF32ProductIsWithinTheQuantizationBound) {
  // Each weight is off by at most half its row's step.
  const double worst = test::expect_within_quantization_bound([](const TensorView& W) {
    const auto p = cpu::pack_int8_panels(W);
    return test::PackedForBound{
        [p](const float* X, int n, const float* b, float* Y) { cpu::linear_int8_panels_reference(X, n, *p, b, Y); },
        [p](int r, int) { return double(p->scale[r]) / 2; }};
  });
  EXPECT_LT(worst, 0.05);  // on normal data, a few percent of the output's scale at most
}

TEST(Int8Panels, OnlyTheContextThatAskedUsesThem) {
  if (!cpu::int8_panels_supported()) GTEST_SKIP() << "neither AVX-512 VNNI nor AVX2: the int8 panels are never used here";
  auto model = Model::load(test::fixture("models/llama_bytelevel_bf16"));
  auto plain = model->new_cpu_context(64), int8 = model->new_cpu_context(64, cpu::WeightForm::Int8), again = model->new_cpu_context(64);
  Batch b = Batch::causal(std::vector<int32_t>{5, 17, 99, 3});
  ForwardOutput o1, o2, o3;
  plain->forward(b, o1);
  int8->forward(b, o2);
  again->forward(b, o3);
  ASSERT_EQ(o1.logits.size(), o2.logits.size());
  EXPECT_EQ(0, std::memcmp(o1.logits.data(), o3.logits.data(), o1.logits.size() * sizeof(float)));  // unchanged
  EXPECT_NE(0, std::memcmp(o1.logits.data(), o2.logits.data(), o1.logits.size() * sizeof(float)));  // requantized
  double diff = 0, mag = 0;
  for (size_t i = 0; i < o1.logits.size(); ++i) diff += std::fabs(o1.logits[i] - o2.logits[i]), mag += std::fabs(o1.logits[i]);
  EXPECT_LT(diff, 0.1 * mag);  // close: the same model, 8-bit weights
}

// A drafter gets a context per prompt: the requantized copy is made once per model and shared, and a later context
// on it computes the same bits as the first.
TEST(Int8Panels, OneRequantizedCopyPerModel) {
  if (!cpu::int8_panels_supported()) GTEST_SKIP() << "neither AVX-512 VNNI nor AVX2: the int8 panels are never used here";
  auto model = Model::load(test::fixture("models/llama_bytelevel_bf16"));
  const auto first = model->requantized_weights(cpu::WeightForm::Int8);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first, model->requantized_weights(cpu::WeightForm::Int8));
  EXPECT_NE(first->lm_head.requantized, nullptr);
  for (const auto& L : first->layers) EXPECT_NE(L.w_down.requantized, nullptr);
  EXPECT_EQ(model->weights().lm_head.requantized, nullptr);  // the model's own weights untouched
  Batch b = Batch::causal(std::vector<int32_t>{5, 17, 99, 3});
  ForwardOutput o1, o2;
  model->new_cpu_context(64, cpu::WeightForm::Int8)->forward(b, o1);
  model->new_cpu_context(64, cpu::WeightForm::Int8)->forward(b, o2);
  ASSERT_EQ(o1.logits.size(), o2.logits.size());
  EXPECT_EQ(0, std::memcmp(o1.logits.data(), o2.logits.data(), o1.logits.size() * sizeof(float)));
  EXPECT_EQ(model->requantized_weights(cpu::WeightForm::Int8)->lm_head.requantized, first->lm_head.requantized);  // still the one copy
}

}  // namespace
}  // namespace specscope
