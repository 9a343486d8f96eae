// GPT-OSS's configuration as the readers take it: gpt-oss-20b's published config.json (its shape, experts, window,
// YaRN with truncate false) and what that YaRN makes of the frequencies and the cos/sin factor; bad fields refused
// naming them. (The model itself is checked against transformers and llama.cpp by model_parity_test and
// gguf_model_test, the methods by methods_test.)
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/model/config.h"
#include "engine/util/error.h"

using namespace specscope;

namespace {

// openai/gpt-oss-20b's config.json, the keys the loader reads (its quantization_config names the MXFP4 experts).
std::string gpt_oss_20b_config() {
  std::string layer_types;
  for (int l = 0; l < 24; ++l) layer_types += std::string(l ? "," : "") + (l % 2 ? "\"full_attention\"" : "\"sliding_attention\"");
  return R"({"architectures": ["GptOssForCausalLM"], "attention_bias": true, "eos_token_id": 200002,
    "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880, "initial_context_length": 4096,
    "intermediate_size": 2880, "layer_types": [)" + layer_types + R"(], "max_position_embeddings": 131072,
    "model_type": "gpt_oss", "num_attention_heads": 64, "num_experts_per_tok": 4, "num_hidden_layers": 24,
    "num_key_value_heads": 8, "num_local_experts": 32, "pad_token_id": 199999,
    "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
      "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"},
    "rms_norm_eps": 1e-05, "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
      "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false},
    "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
    "tie_word_embeddings": false, "vocab_size": 201088})";
}

TEST(GptOss, ThePublishedConfigReadsAsTheModel) {
  const ModelConfig c = ModelConfig::from_json_text(gpt_oss_20b_config(), "config.json");
  EXPECT_EQ(c.architecture, "GptOssForCausalLM");
  EXPECT_EQ(c.num_experts, 32);
  EXPECT_EQ(c.experts_per_token, 4);
  EXPECT_EQ(c.expert_ffn, 2880);
  EXPECT_EQ(c.expert_layers(), 24);
  EXPECT_TRUE(c.norm_topk_prob && c.expert_bias && c.attention_sinks && c.attention_bias);
  EXPECT_FLOAT_EQ(c.swiglu_limit, 7.f);
  EXPECT_FLOAT_EQ(c.swiglu_alpha, 1.702f);
  EXPECT_EQ(c.window_of(0), 128);
  EXPECT_EQ(c.window_of(1), 0);
  EXPECT_EQ(c.window_of(22), 128);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_FALSE(c.tie_word_embeddings);
  const RopeScaling& r = c.rope_scaling;
  EXPECT_EQ(r.type, "yarn");
  EXPECT_FLOAT_EQ(r.factor, 32.f);
  EXPECT_EQ(r.original_max_position_embeddings, 4096);
  EXPECT_FALSE(r.truncate);
  EXPECT_FLOAT_EQ(rope_attention_factor(c), float(0.1 * std::log(32.0) + 1.0));
  // The ramp runs between dimension pairs 8.09 and 17.4 (the pairs that turn 32 and 1 times over 4,096 positions):
  // below it the frequencies are the model's own, above it divided by 32, in between mixed.
  const auto inv = rope_inv_freq(c);
  ASSERT_EQ(inv.size(), 32u);
  for (int i = 0; i < 32; ++i) {
    const float plain = 1.f / std::pow(150000.f, float(2 * i) / 64.f);
    if (i <= 8) EXPECT_FLOAT_EQ(inv[size_t(i)], plain) << i;
    else if (i >= 18) EXPECT_FLOAT_EQ(inv[size_t(i)], plain / 32.f) << i;
    else EXPECT_TRUE(inv[size_t(i)] < plain && inv[size_t(i)] > plain / 32.f) << i;
  }
  // truncate true (transformers' default, llama.cpp's always) floors and ceils the ends to 8 and 18: the plain and the
  // fully scaled pairs stay, every mixed one moves.
  ModelConfig t = c;
  t.rope_scaling.truncate = true;
  const auto trunc = rope_inv_freq(t);
  for (int i = 0; i < 32; ++i) {
    if (i <= 8 || i >= 18) EXPECT_EQ(trunc[size_t(i)], inv[size_t(i)]) << i;
    else EXPECT_NE(trunc[size_t(i)], inv[size_t(i)]) << i;
  }
}

void expect_refused(const std::string& from, const std::string& to, const std::string& names) {
  std::string text = gpt_oss_20b_config();
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  try {
    ModelConfig::from_json_text(text, "config.json");
    ADD_FAILURE() << "accepted " << to;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
  }
}

TEST(GptOss, BadFieldsAreRefusedNamingThem) {
  expect_refused(R"("num_experts_per_tok": 4)", R"("num_experts_per_tok": 33)", "num_experts_per_tok");
  expect_refused(R"("num_experts_per_tok": 4)", R"("num_experts_per_tok": 0)", "num_experts_per_tok");
  expect_refused(R"("num_local_experts": 32)", R"("num_local_experts": 0)", "num_local_experts");
  expect_refused(R"("swiglu_limit": 7.0)", R"("swiglu_limit": 0)", "swiglu_limit");
  expect_refused(R"("original_max_position_embeddings": 4096, )", "", "original_max_position_embeddings");
  expect_refused(R"("truncate": false)", R"("truncate": "no")", "truncate");
  expect_refused(R"("beta_fast": 32.0)", R"("beta_fast": -1)", "beta_fast");
  expect_refused(R"("factor": 32.0)", R"("factor": 0)", "factor");
}

}  // namespace
