// Stop during a prompt's prefill (issue 18 item 6): a forward checks its thread's stop flag between decoder layers
// and abandons the prompt, leaving the context as it was; the decoding loop then ends with no step, as a stop from its
// step callback would; the runner wires Stop to it. Before, Stop waited for the whole prefill (one forward, seconds
// on a large model and a long prompt) and the run still made its first step.
#include <gtest/gtest.h>

#include <atomic>

#include "engine/generate/generator.h"
#include "engine/methods/factory.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/model.h"
#include "engine/util/interrupt.h"
#include "runs/runner.h"
#include "tests/test_support.h"

using namespace specscope;

namespace {

const std::string kTarget = test::fixture("models/llama_bytelevel_f32");
const std::string kDraft = test::fixture("models/llama_bytelevel_bf16");

std::vector<int32_t> long_prompt(const Model& m) {
  std::string text;
  for (int i = 0; i < 10; ++i) text += "Once upon a time there was a harbor. ";
  return encode_prompt(m, text, false);  // at most one token a byte: fits the fixture's 512
}

}  // namespace

TEST(PrefillInterrupt, AStoppedForwardLeavesTheContextAsItWas) {
  auto model = Model::load(kTarget);
  const auto prompt = long_prompt(*model);
  ASSERT_GT(prompt.size(), 60u);
  auto ctx = model->new_cpu_context(0);
  std::atomic<bool> stop{true};
  ForwardOutput out;
  {
    const InterruptScope scope(&stop);
    EXPECT_THROW(ctx->forward(Batch::causal(prompt), out), Interrupted);
  }
  EXPECT_EQ(ctx->n_past(), 0);
  EXPECT_EQ(ctx->forwards, 0u);
  // The same context then computes the prompt exactly as a fresh one does: the abandoned forward left nothing.
  ctx->forward(Batch::causal(prompt), out);
  auto fresh = model->new_cpu_context(0);
  ForwardOutput want;
  fresh->forward(Batch::causal(prompt), want);
  EXPECT_EQ(ctx->n_past(), int(prompt.size()));
  EXPECT_EQ(out.logits, want.logits);
  // Outside the scope (and with the flag clear) nothing is interrupted.
  stop = false;
  const InterruptScope scope(&stop);
  EXPECT_NO_THROW(fresh->forward(Batch::causal({prompt.data(), 4}), want));
}

TEST(PrefillInterrupt, TheDecodingLoopEndsWithNoStep) {
  auto model = Model::load(kTarget);
  const auto prompt = long_prompt(*model);
  for (const char* method_name : {"vanilla", "sps"}) {
    SCOPED_TRACE(method_name);
    auto method = make_method(MethodSpec{method_name, std::string(method_name) == "sps" ? kDraft : "", "", {}}, *model);
    auto ctx = model->new_cpu_context(0);
    GenerateOptions o;
    o.max_tokens = 8;
    int steps = 0;
    std::atomic<bool> stop{true};
    const InterruptScope scope(&stop);
    const auto r = generate_speculative(*model, *ctx, *method, prompt, o, [&](const StepRecord&, const std::string&) {
      ++steps;
      return true;
    });
    EXPECT_EQ(steps, 0);
    EXPECT_TRUE(r.steps.empty());
    EXPECT_TRUE(r.gen.tokens.empty());
    EXPECT_EQ(r.gen.stop_reason, "callback");
    EXPECT_EQ(r.summary.stop_reason, "callback");
  }
  // Decoding steps are never cut in half: a flag raised during decoding stops the loop between steps.
  auto method = make_method(MethodSpec{"vanilla", "", "", {}}, *model);
  auto ctx = model->new_cpu_context(0);
  GenerateOptions o;
  o.max_tokens = 8;
  o.stop_at_eos = false;
  std::atomic<bool> stop{false};
  const InterruptScope scope(&stop);
  const auto r = generate_speculative(*model, *ctx, *method, prompt, o, [&](const StepRecord& s, const std::string&) {
    if (s.step == 2) stop = true;
    return true;
  });
  EXPECT_EQ(r.steps.size(), 8u) << "the flag only interrupts the prefill";
}

TEST(PrefillInterrupt, StopPressedDuringThePrefillEndsTheJobWithNoStep) {
  // The observer stops the job right before the prefill starts (context_fitted comes just before it), as the app's
  // Stop does while its status bar says the prompt is being read.
  struct StopAtPrefill : runs::JobObserver {
    runs::JobRunner* runner = nullptr;
    int steps = 0;
    std::string stop_reason;
    void context_fitted(const runs::RunKey&, const runs::ContextUse&) override { runner->cancel(); }
    bool step(const runs::RunKey&, const StepRecord&, const std::string&) override { return ++steps, true; }
    void run_finished(const runs::RunResult& r) override { stop_reason = r.gen.stop_reason; }
  };
  runs::ModelCache cache;
  runs::JobRunner runner(cache);
  StopAtPrefill obs;
  obs.runner = &runner;
  runs::Job job;
  job.lanes = {runs::Lane{"vanilla", MethodSpec{"vanilla", "", "", {}}, kTarget}};
  job.prompts = {{"Once upon a time", {}}};
  job.options.max_tokens = 16;
  job.references = false;
  const runs::JobResult r = runner.run(job, obs);
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(obs.steps, 0) << "before, the prefill finished and its step came";
  EXPECT_EQ(obs.stop_reason, "callback");
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_TRUE(r.runs[0].steps.empty());
}
