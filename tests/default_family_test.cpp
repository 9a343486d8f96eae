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

// The shipped EAGLE-1 head (trained on this CPU, official EAGLE-1 layout) drives eagle1 and eagle2 losslessly
// and has learned something: on held-out prompts EAGLE-2's dynamic trees commit well over two tokens per step.
TEST(DefaultFamily, ShippedEagleHeadIsLosslessAndAccepts) {
  auto base = Model::load(kModels + "base");
  for (const char* name : {"eagle1", "eagle2"}) {
    MethodSpec spec;
    spec.name = name;
    spec.head_path = kModels + "eagle1";
    auto method = make_method(spec, *base);
    std::ifstream f(std::string(SPECSCOPE_SOURCE_DIR) + "/assets/prompts/heldout.jsonl");
    std::string line;
    GenerateOptions opts;
    opts.max_tokens = 48;
    long committed = 0, steps = 0;
    for (int i = 0; i < 6 && std::getline(f, line); ++i) {
      auto ids = encode_prompt(*base, nlohmann::json::parse(line)["prompt"].get<std::string>(), true);
      auto c1 = base->new_cpu_context(0);
      auto ref = generate(*base, *c1, ids, opts);
      auto c2 = base->new_cpu_context(0);
      auto res = generate_speculative(*base, *c2, *method, ids, opts);
      EXPECT_EQ(res.gen.tokens, ref.tokens) << name;
      committed += res.summary.new_tokens;
      steps += res.summary.steps;
    }
    EXPECT_GT(double(committed) / double(steps), 2.0) << name << ": tau on held-out prompts";
  }
}

// The shipped Medusa heads: lossless with their static tree, and accepting drafts on held-out prompts.
TEST(DefaultFamily, ShippedMedusaHeadsAreLosslessAndAccept) {
  auto base = Model::load(kModels + "base");
  MethodSpec spec;
  spec.name = "medusa";
  spec.head_path = kModels + "medusa";
  auto method = make_method(spec, *base);
  std::ifstream f(std::string(SPECSCOPE_SOURCE_DIR) + "/assets/prompts/heldout.jsonl");
  std::string line;
  GenerateOptions opts;
  opts.max_tokens = 48;
  long committed = 0, steps = 0;
  for (int i = 0; i < 6 && std::getline(f, line); ++i) {
    auto ids = encode_prompt(*base, nlohmann::json::parse(line)["prompt"].get<std::string>(), true);
    auto c1 = base->new_cpu_context(0);
    auto ref = generate(*base, *c1, ids, opts);
    auto c2 = base->new_cpu_context(0);
    auto res = generate_speculative(*base, *c2, *method, ids, opts);
    EXPECT_EQ(res.gen.tokens, ref.tokens);
    committed += res.summary.new_tokens;
    steps += res.summary.steps;
  }
  EXPECT_GT(double(committed) / double(steps), 1.3) << "tau on held-out prompts";
}
