// The shipped default family (assets/models) loads, chats, and speculative decoding with its draft model is
// lossless and actually accepts drafts on held-out prompts.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/generate/generator.h"
#include "engine/methods/factory.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/model.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"

using namespace specscope;

static const std::string kModels = std::string(SPECSCOPE_SOURCE_DIR) + "/assets/models/";

TEST(DefaultFamily, LoadsWithItsChatTemplate) {
  auto base = Model::load(kModels + "base");
  auto draft = Model::load(kModels + "draft");
  EXPECT_EQ(base->config().architecture, "LlamaForCausalLM");
  EXPECT_GT(base->parameter_count(), 8'000'000u);  // larger than a cache-resident toy
  EXPECT_EQ(base->chat_template().family_name(), "llama3");
  EXPECT_EQ(base->tokenizer().vocab_size(), draft->tokenizer().vocab_size());
}

TEST(DefaultFamily, DraftModelSpeculationIsLosslessAndAccepts) {
  auto base = Model::load(kModels + "base");
  std::ifstream f(std::string(SPECSCOPE_SOURCE_DIR) + "/assets/prompts/heldout.jsonl");
  std::string line;
  MethodSpec spec;
  spec.name = "sps";
  spec.draft_path = kModels + "draft";
  auto sps = make_method(spec, *base);
  GenerateOptions opts;
  opts.max_tokens = 48;
  long accepted = 0, steps = 0;
  for (int i = 0; i < 8 && std::getline(f, line); ++i) {
    auto prompt = nlohmann::json::parse(line)["prompt"].get<std::string>();
    auto ids = encode_prompt(*base, prompt, true);
    auto c1 = base->new_cpu_context(0);
    auto ref = generate(*base, *c1, ids, opts);
    EXPECT_FALSE(ref.text.empty()) << prompt;
    auto c2 = base->new_cpu_context(0);
    auto res = generate_speculative(*base, *c2, *sps, ids, opts);
    EXPECT_EQ(res.gen.tokens, ref.tokens) << prompt;
    EXPECT_EQ(res.gen.text, ref.text) << prompt;
    for (auto& s : res.steps) accepted += s.accepted_count();
    steps += res.summary.steps;
  }
  EXPECT_GT(double(accepted) / double(steps), 1.0) << "the distilled draft should average more than one accepted token";
}

// Runs `spec` on the first `prompts` held-out prompts, checks every output equals vanilla's, returns τ.
static double lossless_tau_on_heldout(const Model& base, const MethodSpec& spec, int prompts) {
  auto method = make_method(spec, base);
  std::ifstream f(std::string(SPECSCOPE_SOURCE_DIR) + "/assets/prompts/heldout.jsonl");
  std::string line;
  GenerateOptions opts;
  opts.max_tokens = 48;
  long committed = 0, steps = 0;
  for (int i = 0; i < prompts && std::getline(f, line); ++i) {
    auto ids = encode_prompt(base, nlohmann::json::parse(line)["prompt"].get<std::string>(), true);
    auto c1 = base.new_cpu_context(0);
    auto ref = generate(base, *c1, ids, opts);
    auto c2 = base.new_cpu_context(0);
    auto res = generate_speculative(base, *c2, *method, ids, opts);
    EXPECT_EQ(res.gen.tokens, ref.tokens) << spec.name << " on held-out prompt " << i;
    committed += res.summary.new_tokens;
    steps += res.summary.steps;
  }
  return steps ? double(committed) / double(steps) : 0;
}

static MethodSpec head_spec(const char* name, const char* dir) {
  MethodSpec spec;
  spec.name = name;
  spec.head_path = kModels + dir;
  return spec;
}

// The shipped EAGLE-1 head (trained on this CPU, official EAGLE-1 layout) drives eagle1 and eagle2 losslessly
// and has learned something: on held-out prompts they commit well over two tokens per step.
TEST(DefaultFamily, ShippedEagleHeadIsLosslessAndAccepts) {
  auto base = Model::load(kModels + "base");
  for (const char* name : {"eagle1", "eagle2"})
    EXPECT_GT(lossless_tau_on_heldout(*base, head_spec(name, "eagle1"), 6), 2.0) << name;
}

// The shipped EAGLE-3 head (trained on this CPU, official EAGLE-3 layout with d2t/t2d): lossless with EAGLE-2's
// dynamic trees, and accepting drafts on held-out prompts (3.15 on these 6 at 48 tokens, 3.24 over all 80 at 96;
// the head before its second training stage had 2.48 and 2.62, and fails this bound).
TEST(DefaultFamily, ShippedEagle3HeadIsLosslessAndAccepts) {
  auto base = Model::load(kModels + "base");
  EXPECT_GT(lossless_tau_on_heldout(*base, head_spec("eagle3", "eagle3"), 6), 2.8);
}

// The Medusa-1 heads (assets/models/medusa, trained on the frozen base): lossless with their static tree, and
// accepting drafts on held-out prompts.
TEST(DefaultFamily, ShippedMedusa1HeadsAreLosslessAndAccept) {
  auto base = Model::load(kModels + "base");
  EXPECT_GT(lossless_tau_on_heldout(*base, head_spec("medusa", "medusa"), 6), 1.3);
}

// The family's Medusa (assets/models/medusa2): Medusa-2's joint recipe fine-tuned the base (a LoRA adapter merged
// at load time) together with its heads. Its `medusa` decoding equals its own vanilla decoding, and on the same
// prompts it commits more per step than Medusa-1 on the frozen base, the Medusa paper's reason for the recipe
// (2.32 against 1.98 over all 80 held-out prompts at 96 tokens).
TEST(DefaultFamily, ShippedMedusa2IsLosslessAndAcceptsMoreThanMedusa1) {
  auto base = Model::load(kModels + "base");
  const double medusa1 = lossless_tau_on_heldout(*base, head_spec("medusa", "medusa"), 6);
  auto tuned = Model::load(kModels + "medusa2");
  const double medusa2 = lossless_tau_on_heldout(*tuned, head_spec("medusa", "medusa2/heads"), 6);
  EXPECT_GT(medusa2, 1.8);
  EXPECT_GT(medusa2, medusa1 + 0.1);
}

// The shipped Speculative Streaming model (the base fine-tuned with streams, assets/models/streaming): its
// `streaming` decoding equals its own vanilla greedy decoding, one target forward per step, and its streams
// commit well over one token per forward on held-out prompts. Its default tree (the 60 most probable paths of the
// 4-stream, 10-ary tree) accepts more than the whole 3-stream, 2-ary tree of 14 nodes the model shipped with before.
TEST(DefaultFamily, ShippedStreamingModelIsLosslessAndAccepts) {
  auto model = Model::load(kModels + "streaming");
  MethodSpec spec;
  spec.name = "streaming";
  const double tau = lossless_tau_on_heldout(*model, spec, 6);  // 2.52 over all 80 held-out prompts at 96 tokens
  spec.options = {{"gamma", "3"}, {"stream-top-k", "2"}, {"total-tokens", "0"}};
  const double whole_14 = lossless_tau_on_heldout(*model, spec, 6);  // 1.99 over all 80
  EXPECT_GT(whole_14, 1.4);
  EXPECT_GT(tau, 2.0);
  EXPECT_GT(tau, whole_14 + 0.25);
}
