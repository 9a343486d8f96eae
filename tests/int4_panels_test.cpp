// Int4 weight panels (engine/cpu/int4_panels.h): the packing holds ggml Q4_0's codes and scales, the AVX-512 VNNI
// and AVX2 kernels give the scalar reference's bits, a token's outputs do not depend on the batch, the error against the f32
// product stays within the quantization bound, and a context asked for int4 weights uses them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/cpu/int4_panels.h"
#include "engine/cpu/panel_act.h"
#include "engine/cpu/weight_form.h"
#include "engine/model/model.h"
#include "tests/panel_test_support.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using test::DenseWeight;
using test::normal_floats;

// Each group's scale is its value of largest magnitude over -8 (in f16), and that value's code is 0: the same
// codes as ggml's Q4_0 up to rounding at exact halves.
TEST(Int4Panels, PackingKeepsEachGroupsExtremeExactlyAndEveryWeightWithinHalfAStep) {
  std::mt19937 rng(3);
  const int m = 19, k = 70;  // a partial panel and a partial group
  DenseWeight d{normal_floats(size_t(m) * k, rng)};
  const auto p = cpu::pack_int4_panels(d.view(m, k));
  ASSERT_EQ(p->groups, 3);
  ASSERT_EQ(p->panels, 2);
  for (int r = 0; r < m; ++r)
    for (int g = 0; g < p->groups; ++g) {
      float extreme = 0;
      for (int i = 32 * g; i < std::min(k, 32 * g + 32); ++i)
        if (std::fabs(d.w[size_t(r) * k + i]) > std::fabs(extreme)) extreme = d.w[size_t(r) * k + i];
      const float s = p->scale(r, g);
      EXPECT_NEAR(s, extreme / -8.f, std::fabs(extreme) / 8.f * 1e-3f) << r << " " << g;
      for (int i = 32 * g; i < std::min(k, 32 * g + 32); ++i) {  // half a step; a whole one where 15 clamped
        const float w = d.w[size_t(r) * k + i], q = float(p->code(r, i) - 8) * s;
        EXPECT_LE(std::fabs(q - w), std::fabs(s) * (p->code(r, i) == 15 ? 1.f : 0.5f) * 1.01f) << r << " col " << i;
        if (w == extreme) EXPECT_EQ(p->code(r, i), 0);
      }
    }
  for (int i = k; i < 96; ++i) EXPECT_EQ(p->code(0, i), 8);  // k past its end: weight 0
  for (int r = m; r < 32; ++r) EXPECT_EQ(p->scale(r, 0), 0.f);  // rows past m: scale 0
}

TEST(Int4Panels, KernelEqualsReferenceAndIsBatchInvariant) {
  if (!cpu::int4_panels_supported()) GTEST_SKIP() << "neither AVX-512 VNNI nor AVX2: the int4 panels are never used here";
  test::expect_kernel_equals_reference_and_batch_invariant(
      [](const TensorView& W) {
        const auto p = cpu::pack_int4_panels(W);
        return test::PanelPair{
            [p](const float* X, int n, const float* b, float* Y) { cpu::linear_int4_panels(X, n, *p, b, Y); },
            [p](const float* X, int n, const float* b, float* Y) { cpu::linear_int4_panels_reference(X, n, *p, b, Y); }};
      },
      11);
}

TEST(Int4Panels, ErrorAgainstTheF32ProductIsWithinTheQuantizationBound) {
  // Each weight is off by at most half its group's step, a whole step for the clamped code 15 (Q4_0's one-sided
  // range); 1% more for the f16 rounding of the step.
  const double worst = test::expect_within_quantization_bound([](const TensorView& W) {
    const auto p = cpu::pack_int4_panels(W);
    return test::PackedForBound{
        [p](const float* X, int n, const float* b, float* Y) { cpu::linear_int4_panels_reference(X, n, *p, b, Y); },
        [p](int r, int i) { return (p->code(r, i) == 15 ? 1.0 : 0.5) * std::fabs(p->scale(r, i / 32)) * 1.01; }};
  });
  EXPECT_LT(worst, 0.15);  // on normal data, several percent of the output's scale at most
}

TEST(Int4Panels, OnlyTheContextThatAskedUsesThemAndEachFormHasOneCopy) {
  if (!cpu::int4_panels_supported()) GTEST_SKIP() << "neither AVX-512 VNNI nor AVX2: the int4 panels are never used here";
  auto model = Model::load(test::fixture("models/llama_bytelevel_bf16"));
  const auto w4 = model->requantized_weights(cpu::WeightForm::Int4);
  ASSERT_NE(w4, nullptr);
  EXPECT_EQ(w4, model->requantized_weights(cpu::WeightForm::Int4));
  EXPECT_NE(w4, model->requantized_weights(cpu::WeightForm::Int8));
  EXPECT_EQ(model->requantized_weights(cpu::WeightForm::AsLoaded), nullptr);
  EXPECT_EQ(w4->lm_head.requantized_bits, 4);
  for (const auto& L : w4->layers) EXPECT_EQ(L.w_down.requantized_bits, 4);
  EXPECT_EQ(model->weights().lm_head.requantized, nullptr);  // the model's own weights untouched
  auto plain = model->new_cpu_context(64), int4 = model->new_cpu_context(64, cpu::WeightForm::Int4),
       int8 = model->new_cpu_context(64, cpu::WeightForm::Int8);
  Batch b = Batch::causal(std::vector<int32_t>{5, 17, 99, 3});
  ForwardOutput o1, o4, o8;
  plain->forward(b, o1);
  int4->forward(b, o4);
  int8->forward(b, o8);
  ASSERT_EQ(o1.logits.size(), o4.logits.size());
  EXPECT_NE(0, std::memcmp(o1.logits.data(), o4.logits.data(), o1.logits.size() * sizeof(float)));
  double d4 = 0, d8 = 0, mag = 0;
  for (size_t i = 0; i < o1.logits.size(); ++i)
    d4 += std::fabs(o1.logits[i] - o4.logits[i]), d8 += std::fabs(o1.logits[i] - o8.logits[i]),
        mag += std::fabs(o1.logits[i]);
  EXPECT_LT(d4, 0.25 * mag);  // close: the same model, 4-bit weights
  EXPECT_GT(d4, d8);          // and further from it than 8-bit weights
}

// The panels' activation quantizer: the AVX-512 loop gives the scalar loop's bits for any k (tails of 1-15), for
// rows holding a NaN or an infinity (scale NaN, codes 0) and rows of zeros or denormals (scale 0, codes 0), with
// both offsets; and a NaN in a token's row turns that token's outputs NaN and no other token's.
TEST(PanelActivations, VectorQuantizerEqualsTheScalarOneOnEdgeRows) {
  std::mt19937 rng(7);
  for (int k : {1, 15, 16, 17, 70, 256}) {
    const int n = 5, kp = (k + 31) / 32 * 32;
    auto X = normal_floats(size_t(n) * k, rng);
    X[size_t(1) * k + size_t(k / 2)] = std::nanf("");
    X[size_t(2) * k] = -INFINITY;
    for (int i = 0; i < k; ++i) X[size_t(3) * k + i] = 0.f, X[size_t(4) * k + i] = 1e-39f;
    for (uint8_t offset : {uint8_t(0), uint8_t(128)}) {
      std::vector<uint8_t> qa(size_t(n) * kp, 7), qb(size_t(n) * kp, 9);
      std::vector<float> sa(n, -1.f), sb(n, -2.f);
      cpu::detail::quantize_token_rows(X.data(), n, k, kp, offset, qa.data(), sa.data());
      cpu::detail::quantize_token_rows_scalar(X.data(), n, k, kp, offset, qb.data(), sb.data());
      ASSERT_EQ(qa, qb) << "k " << k;
      ASSERT_EQ(0, std::memcmp(sa.data(), sb.data(), sa.size() * sizeof(float))) << "k " << k;
      EXPECT_TRUE(std::isnan(sa[1]) && std::isnan(sa[2]));
      EXPECT_EQ(sa[3], 0.f);
      EXPECT_EQ(sa[4], 0.f);
      for (int t = 1; t < n; ++t)
        for (int i = 0; i < kp; ++i) EXPECT_EQ(qa[size_t(t) * kp + i], offset);  // code 0
      EXPECT_GT(sa[0], 0.f);
    }
  }
  if (!cpu::int4_panels_supported()) return;
  const int m = 20, k = 64, n = 3;
  DenseWeight d{normal_floats(size_t(m) * k, rng)};
  const auto p = cpu::pack_int4_panels(d.view(m, k));
  auto X = normal_floats(size_t(n) * k, rng);
  X[size_t(1) * k + 5] = std::nanf("");
  std::vector<float> y(size_t(n) * m), want(size_t(n) * m);
  cpu::linear_int4_panels(X.data(), n, *p, nullptr, y.data());
  cpu::linear_int4_panels_reference(X.data(), n, *p, nullptr, want.data());
  EXPECT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)));
  for (int r = 0; r < m; ++r) {
    EXPECT_TRUE(std::isfinite(y[size_t(r)]));
    EXPECT_TRUE(std::isnan(y[size_t(m) + r]));
    EXPECT_TRUE(std::isfinite(y[size_t(2 * m) + r]));
  }
}

TEST(WeightForm, NamesRoundTripAndUnknownNamesAreRefused) {
  for (auto f : {cpu::WeightForm::AsLoaded, cpu::WeightForm::Int8, cpu::WeightForm::Int4})
    EXPECT_EQ(cpu::parse_weight_form(cpu::weight_form_name(f)), f);
  EXPECT_FALSE(cpu::parse_weight_form("int2").has_value());
  EXPECT_FALSE(cpu::parse_weight_form("").has_value());
}

}  // namespace
}  // namespace specscope
