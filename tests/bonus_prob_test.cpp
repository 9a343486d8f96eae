// bonus_prob means one thing at every step of a greedy run, the prefill step included: the target's softmax
// probability of the bonus token at its position (it was 1.0, the one-hot greedy distribution, at step 0 only).
#include <gtest/gtest.h>

#include "engine/methods/factory.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/model.h"
#include "engine/sampling/sampler.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

TEST(BonusProb, GreedyStepsReportTheTargetsSoftmaxProbabilityAtEveryStep) {
  auto model = Model::load(test::fixture("models/llama_bytelevel_f32"));
  const int V = model->config().vocab_size;
  auto method = make_method(MethodSpec{"vanilla", "", "", {}}, *model);
  auto ctx = model->new_cpu_context(0);
  const auto prompt = encode_prompt(*model, "The quick brown fox", false);
  GenerateOptions opts;
  opts.max_tokens = 8;
  const auto res = generate_speculative(*model, *ctx, *method, prompt, opts);
  ASSERT_GE(res.steps.size(), 2u);
  // Recompute each position's distribution from scratch: the sequence up to the step's bonus token.
  std::vector<int32_t> seq = prompt;
  for (const auto& st : res.steps) {
    auto ref = model->new_cpu_context(0);
    ForwardOutput out;
    Batch b = Batch::causal(seq);
    b.logit_rows = {int(seq.size()) - 1};
    ref->forward(b, out);
    const float p = softmax_probs(out.row_logits(0), V)[size_t(st.bonus_token)];
    EXPECT_NEAR(st.bonus_prob, p, 1e-5) << "step " << st.step;
    EXPECT_LT(st.bonus_prob, 1.0f) << "step " << st.step;  // a one-hot 1.0 would say nothing
    seq.push_back(st.bonus_token);
  }
}

}  // namespace
}  // namespace specscope
