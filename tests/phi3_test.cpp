// Microsoft's Phi-3 family (Phi3ForCausalLM; llama.cpp's "phi3": Phi-3, Phi-3.5 and Phi-4-mini): fused q/k/v and
// gate/up matrices, RoPE on part of each head, LongRoPE. Parity with transformers is in model_parity_test (phi3_f32,
// its long factors included) and gguf_model_test (its GGUF files); here: how those parts are read and refused, and
// speculation on the family staying lossless.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/cpu/rope_table.h"
#include "engine/model/config.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/mapped_file.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;

json fixture_config() { return json::parse(read_text_file(test::fixture("models/phi3_f32/config.json"))); }

// The fixture's config as Microsoft's released Phi-3.5 / Phi-4-mini configs write it (transformers 4): rope_theta,
// partial_rotary_factor and original_max_position_embeddings at the top level, rope_scaling {type: longrope}.
json released_form() {
  json j = fixture_config();
  const json rp = j["rope_parameters"];
  j.erase("rope_parameters");
  j["rope_theta"] = rp["rope_theta"];
  j["rope_scaling"] = {{"type", "longrope"}, {"short_factor", rp["short_factor"]}, {"long_factor", rp["long_factor"]}};
  return j;
}

TEST(Phi3, ConfigAndGgufReadTheSameModel) {
  const auto hf = Model::load(test::fixture("models/phi3_f32"));
  const auto gguf = Model::load(test::fixture("gguf_models/phi3_f32.f32.gguf"));
  for (const ModelConfig* c : {&hf->config(), &gguf->config()}) {
    SCOPED_TRACE(c->model_type);
    EXPECT_EQ(c->architecture, "Phi3ForCausalLM");
    EXPECT_TRUE(c->fused_projections);
    EXPECT_EQ(c->head_dim, 16);
    EXPECT_EQ(c->rotary_dims(), 12);  // partial_rotary_factor 0.75
    EXPECT_EQ(c->rope_scaling.type, "longrope");
    EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 4096);
    EXPECT_NEAR(rope_attention_factor(*c), std::sqrt(1.0 + std::log(4.0) / std::log(4096.0)), 1e-6);
    EXPECT_EQ(c->rope_scaling.short_factor, (std::vector<float>{1.0f, 1.1f, 1.3f, 1.7f, 2.2f, 3.0f}));
    EXPECT_EQ(c->rope_scaling.long_factor, (std::vector<float>{1.0f, 1.6f, 2.9f, 5.0f, 8.5f, 13.0f}));
    EXPECT_FALSE(c->sliding_window.has_value());  // the GGUF file says 0: none
    EXPECT_FALSE(c->extended_forward());
  }
  // Each fused matrix is bound as views of its rows, in q, k, v and gate, up order.
  const auto& L = hf->weights().layers[0];
  const auto* qkv = static_cast<const char*>(L.wq.data);
  EXPECT_EQ(L.wq.shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(L.wk.shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(static_cast<const char*>(L.wk.data), qkv + 64 * 64 * sizeof(float));
  EXPECT_EQ(static_cast<const char*>(L.wv.data), qkv + (64 + 32) * 64 * sizeof(float));
  EXPECT_EQ(static_cast<const char*>(L.w_up.data), static_cast<const char*>(L.w_gate.data) + 128 * 64 * sizeof(float));
  EXPECT_EQ(hf->parameter_count(), gguf->parameter_count());  // the factor tensors are not parameters
}

TEST(Phi3, ReleasedConfigFormReadsAsTheFixture) {
  const ModelConfig a = ModelConfig::from_json_text(fixture_config().dump(), "a/config.json");
  const ModelConfig b = ModelConfig::from_json_text(released_form().dump(), "b/config.json");
  EXPECT_EQ(b.rotary_dims(), a.rotary_dims());
  EXPECT_EQ(b.rope_scaling.type, a.rope_scaling.type);
  EXPECT_EQ(b.rope_scaling.short_factor, a.rope_scaling.short_factor);
  EXPECT_EQ(b.rope_scaling.long_factor, a.rope_scaling.long_factor);
  EXPECT_EQ(b.rope_scaling.original_max_position_embeddings, a.rope_scaling.original_max_position_embeddings);
  EXPECT_FLOAT_EQ(b.rope_scaling.attention_factor, a.rope_scaling.attention_factor);
  // "su", LongRoPE's first name (the first Phi-3-128k configs), is the same scaling.
  json su = released_form();
  su["rope_scaling"]["type"] = "su";
  EXPECT_EQ(ModelConfig::from_json_text(su.dump(), "c/config.json").rope_scaling.type, "longrope");
  // An explicit attention_factor wins over the one derived from the context lengths (transformers' order).
  json explicit_factor = released_form();
  explicit_factor["rope_scaling"]["attention_factor"] = 1.5;
  EXPECT_FLOAT_EQ(ModelConfig::from_json_text(explicit_factor.dump(), "d/config.json").rope_scaling.attention_factor, 1.5f);
  // Phi-3-mini-4k: no scaling, a 2047-token window; Phi-3 slides whenever sliding_window is set.
  json mini = released_form();
  mini["rope_scaling"] = nullptr;
  mini["sliding_window"] = 2047;
  mini.erase("partial_rotary_factor");
  const ModelConfig m = ModelConfig::from_json_text(mini.dump(), "e/config.json");
  EXPECT_EQ(m.rope_scaling.type, "none");
  EXPECT_EQ(m.rotary_dims(), m.head_dim);
  EXPECT_FLOAT_EQ(rope_attention_factor(m), 1.f);
  ASSERT_TRUE(m.sliding_window.has_value());
  EXPECT_EQ(*m.sliding_window, 2047);
}

TEST(Phi3, BadRopeParametersAreRefusedNamingThem) {
  json j = released_form();
  j["rope_scaling"]["short_factor"].push_back(1.0);  // 7 values for 6 rotary frequencies
  test::expect_config_refused(j, "'short_factor' has 7 values");
  j = released_form();
  j["rope_scaling"]["long_factor"][2] = 0.0;
  test::expect_config_refused(j, "'long_factor' holds a value that is not a positive number");
  j = released_form();
  j["rope_scaling"].erase("long_factor");
  test::expect_config_refused(j, "'long_factor'");
  j = released_form();
  j["partial_rotary_factor"] = 0.7;  // int(16 * 0.7) = 11: odd
  test::expect_config_refused(j, "partial_rotary_factor");
  j = released_form();
  j["partial_rotary_factor"] = 1.5;
  test::expect_config_refused(j, "partial_rotary_factor");
}

// The CLI's answer to such a checkpoint: one line naming the file and the field, exit code 2.
TEST(Phi3, CliRefusesABadFactorListWithExitCode2) {
  json j = fixture_config();
  j["rope_parameters"]["short_factor"].erase(0);
  test::expect_cli_refuses_config("models/phi3_f32", j, "'short_factor' has 5 values");
}

// Phi-3's chat tokens swallow the line break after them (their tokenizer.json's rstrip; GGUF keeps no flag, and
// the GGUF tokenizer restores it for phi3 files as llama.cpp's Phi-3 patch does): the fixture's chat template
// renders a conversation as transformers does, and both loaders give the Hugging Face tokenizer's ids for it
// (golden "chat", from transformers, which checks that the ids are those of the text without the line breaks).
TEST(Phi3, ChatTokensSwallowTheLineBreakAfterThemInBothLoaders) {
  const json chat = json::parse(read_text_file(test::fixture("models/phi3_f32/golden.json"))).at("chat");
  const auto text = chat.at("text").get<std::string>();
  const auto want = chat.at("ids").get<std::vector<int32_t>>();
  const auto hf = Model::load(test::fixture("models/phi3_f32"));
  const auto gguf = Model::load(test::fixture("gguf_models/phi3_f32.f32.gguf"));
  std::vector<ChatMessage> messages;
  for (const auto& m : chat.at("messages"))
    messages.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
  for (const Model* m : {hf.get(), gguf.get()}) {
    SCOPED_TRACE(m->path());
    EXPECT_EQ(m->tokenizer().encode(text, true), want);
    EXPECT_EQ(m->chat_template().render(messages, /*add_generation_prompt=*/true), text);
  }
}

// Partial rotary: the dimensions past rotary_dim pass through untouched, and the rotated ones are scaled by the
// attention factor (a rotation by angle 0 at position 0 leaves cos = factor, sin = 0).
TEST(Phi3, RopeTableTurnsOnlyTheRotaryDimensions) {
  const int head_dim = 8;
  cpu::RopeTable table({1.0f, 0.25f}, head_dim, 1.5f);  // 4 of 8 dimensions
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8};
  table.apply(v.data(), 1, 0);
  EXPECT_EQ(v, (std::vector<float>{1.5f, 3.f, 4.5f, 6.f, 5, 6, 7, 8}));
  v = {1, 2, 3, 4, 5, 6, 7, 8};
  table.apply(v.data(), 1, 3);
  const float c0 = std::cos(3.f) * 1.5f, s0 = std::sin(3.f) * 1.5f;
  EXPECT_FLOAT_EQ(v[0], 1 * c0 - 3 * s0);
  EXPECT_FLOAT_EQ(v[2], 3 * c0 + 1 * s0);
  EXPECT_EQ((std::vector<float>(v.begin() + 4, v.end())), (std::vector<float>{5, 6, 7, 8}));
}

// A context longer than the original one takes the long factors: the same prompt's logits then differ, as
// llama.cpp's do with a context past phi3.rope.scaling.original_context_length.
TEST(Phi3, ContextPastTheOriginalLengthTakesTheLongFactors) {
  const auto m = Model::load(test::fixture("models/phi3_f32"));
  const std::vector<int32_t> prompt = {1, 300, 40, 500, 41, 302, 77};
  auto last_logits = [&](int n_ctx) {
    auto ctx = m->new_cpu_context(n_ctx);
    Batch b;
    b.tokens = prompt;
    b.logit_rows = {int(prompt.size()) - 1};
    ForwardOutput out;
    ctx->forward(b, out);
    return out.logits;
  };
  const auto short_ctx = last_logits(4096), long_ctx = last_logits(4097);
  EXPECT_EQ(last_logits(512), short_ctx);
  EXPECT_NE(long_ctx, short_ctx);
}

// Greedy speculation on Phi-3 gives vanilla's tokens through the fused views, partial RoPE and LongRoPE in both the
// drafter's and the target's forwards: SpS drafting with the Q8_0 GGUF file, and prompt lookup.
TEST(Phi3, SpeculationIsLossless) {
  const auto target = Model::load(test::fixture("models/phi3_f32"));
  const auto sps = test::sps_and_pld_beside_vanilla(*target, test::fixture("gguf_models/phi3_f32.q8_0.gguf"),
                                                test::repeating_prompts(1));
  // An 8-bit twin agrees with its source often (about half the drafted nodes here, with this random model's near
  // ties; a drafter that did not compute the same network would all but never hit one of 2,762 tokens).
  EXPECT_GT(sps.accepted * 4, sps.drafted);
}

}  // namespace
}  // namespace specscope
