// Google's Gemma 2 (Gemma2ForCausalLM; llama.cpp's "gemma2"): Gemma 3's norms, GELU and scaled embeddings, sliding
// and full layers alternating, one RoPE, and soft caps on the attention scores and the final logits. Parity with
// transformers and llama.cpp is in model_parity_test (gemma2_f32) and gguf_model_test (its GGUF files); the kernels'
// caps in attention_test and vec_math_test. Here: how the config and the GGUF metadata are read and refused, that
// the fixture's parity depends on both caps, and speculation on the family staying lossless.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/model/config.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/util/mapped_file.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;

json fixture_config() { return json::parse(read_text_file(test::fixture("models/gemma2_f32/config.json"))); }

// google/gemma-2-2b-it's config.json as released (transformers 4.42): rope_theta at the top level, no layer_types.
json released_2b() {
  return json::parse(R"({
    "architectures": ["Gemma2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "attn_logit_softcapping": 50.0, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 107],
    "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2304, "initializer_range": 0.02,
    "intermediate_size": 9216, "max_position_embeddings": 8192, "model_type": "gemma2", "num_attention_heads": 8,
    "num_hidden_layers": 26, "num_key_value_heads": 4, "pad_token_id": 0, "query_pre_attn_scalar": 256,
    "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096, "torch_dtype": "float32",
    "transformers_version": "4.42.4", "use_cache": true, "vocab_size": 256000})");
}

TEST(Gemma2, ConfigAndGgufReadTheSameModel) {
  const auto hf = Model::load(test::fixture("models/gemma2_f32"));
  const auto gguf = Model::load(test::fixture("gguf_models/gemma2_f32.f32.gguf"));
  for (const ModelConfig* c : {&hf->config(), &gguf->config()}) {
    SCOPED_TRACE(c->model_type);
    EXPECT_EQ(c->architecture, "Gemma2ForCausalLM");
    EXPECT_EQ(c->model_type, "gemma2");
    EXPECT_FLOAT_EQ(c->attn_soft_cap, 8.f);
    EXPECT_FLOAT_EQ(c->final_soft_cap, 60.f);
    EXPECT_EQ(c->layer_sliding, (std::vector<uint8_t>{1, 0, 1}));  // alternating, from layer 0
    ASSERT_TRUE(c->sliding_window.has_value());
    EXPECT_EQ(*c->sliding_window, 6);
    EXPECT_EQ(c->window_of(1), 0);
    EXPECT_FALSE(c->qk_norm);
    EXPECT_TRUE(c->sandwich_norms);
    EXPECT_TRUE(c->gelu());
    EXPECT_FLOAT_EQ(c->embed_scale, 8.f);            // sqrt(64)
    EXPECT_FLOAT_EQ(c->attention_scale(), 0.25f);   // query_pre_attn_scalar 16
    EXPECT_FLOAT_EQ(c->rope_local_theta, 0.f);      // one RoPE for every layer
    EXPECT_TRUE(c->extended_forward());
  }
  EXPECT_EQ(hf->parameter_count(), gguf->parameter_count());
}

TEST(Gemma2, ReleasedConfigsRead) {
  const ModelConfig c = ModelConfig::from_json_text(released_2b().dump(), "gemma-2-2b-it/config.json");
  EXPECT_FLOAT_EQ(c.attn_soft_cap, 50.f);
  EXPECT_FLOAT_EQ(c.final_soft_cap, 30.f);
  ASSERT_EQ(c.layer_sliding.size(), 26u);
  for (int l = 0; l < 26; ++l) EXPECT_EQ(c.window_of(l), l % 2 == 0 ? 4096 : 0) << "layer " << l;
  EXPECT_FLOAT_EQ(c.attention_scale(), 1.f / 16.f);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.f);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{1, 107}));
  // Gemma 2 27B: query_pre_attn_scalar is hidden / heads (144), not head_dim (128).
  json big = released_2b();
  big["query_pre_attn_scalar"] = 144;
  big["head_dim"] = 128;
  EXPECT_FLOAT_EQ(ModelConfig::from_json_text(big.dump(), "27b/config.json").attention_scale(), 1.f / 12.f);
  // A config saved with only what differs from transformers' Gemma2Config takes its defaults: the published caps,
  // a 4096-token window on every other layer, 256000 tokens.
  const json minimal = {{"architectures", {"Gemma2ForCausalLM"}}, {"model_type", "gemma2"}};
  const ModelConfig d = ModelConfig::from_json_text(minimal.dump(), "minimal/config.json");
  EXPECT_FLOAT_EQ(d.attn_soft_cap, 50.f);
  EXPECT_FLOAT_EQ(d.final_soft_cap, 30.f);
  EXPECT_EQ(d.window_of(0), 4096);
  EXPECT_EQ(d.window_of(1), 0);
  EXPECT_EQ(d.vocab_size, 256000);
  EXPECT_EQ(d.num_layers, 26);
  // null: no cap (transformers skips a None one).
  json uncapped = released_2b();
  uncapped["attn_logit_softcapping"] = nullptr;
  uncapped["final_logit_softcapping"] = nullptr;
  const ModelConfig u = ModelConfig::from_json_text(uncapped.dump(), "u/config.json");
  EXPECT_FLOAT_EQ(u.attn_soft_cap, 0.f);
  EXPECT_FLOAT_EQ(u.final_soft_cap, 0.f);
}

// Gemma 3 caps too where its config says so (Gemma3TextConfig's caps default to none), rather than being refused.
TEST(Gemma2, Gemma3ConfigWithCapsReadsThem) {
  json j = json::parse(read_text_file(test::fixture("models/gemma3_f32/config.json")));
  EXPECT_FLOAT_EQ(ModelConfig::from_json_text(j.dump(), "g3/config.json").final_soft_cap, 0.f);
  j["final_logit_softcapping"] = 30.0;
  j["attn_logit_softcapping"] = 50.0;
  const ModelConfig c = ModelConfig::from_json_text(j.dump(), "g3/config.json");
  EXPECT_FLOAT_EQ(c.final_soft_cap, 30.f);
  EXPECT_FLOAT_EQ(c.attn_soft_cap, 50.f);
}

TEST(Gemma2, NonPositiveCapIsRefusedNamingIt) {
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"})
    for (double bad : {0.0, -30.0}) {
      json j = released_2b();
      j[key] = bad;
      test::expect_config_refused(j, std::string("'") + key + "' must be a positive number");
    }
  json j = released_2b();
  j["final_logit_softcapping"] = "30";
  test::expect_config_refused(j, "'final_logit_softcapping' must be a number");
}

TEST(Gemma2, CliRefusesAZeroCapWithExitCode2) {
  json j = fixture_config();
  j["final_logit_softcapping"] = 0;
  test::expect_cli_refuses_config("models/gemma2_f32", j, "'final_logit_softcapping' must be a positive number");
}

// The fixture's parity (model_parity_test: within 5e-6 of transformers) rests on both caps: the same checkpoint with
// either cap removed is far from transformers' logits, so neither could be skipped unnoticed.
TEST(Gemma2, ParityDependsOnBothCaps) {
  auto worst_error = [](const Model& m) { return test::first_golden_prompt_error(m, "models/gemma2_f32/golden.json"); };
  EXPECT_LT(worst_error(*Model::load(test::fixture("models/gemma2_f32"))), 2e-5);
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
    SCOPED_TRACE(key);
    json j = fixture_config();
    j[key] = nullptr;
    const std::string dir = test::fixture_with_config("models/gemma2_f32", j);
    const double e = worst_error(*Model::load(dir));
    std::filesystem::remove_all(dir);
    std::printf("[ gemma2   ] without %s: worst relative error %.3g\n", key, e);
    EXPECT_GT(e, 0.02);
  }
}

// Greedy speculation on Gemma 2 gives vanilla's tokens through the capped attention (tree rows and the cache alike)
// and the capped logits: SpS drafting with the Q8_0 GGUF file, and prompt lookup.
TEST(Gemma2, SpeculationIsLossless) {
  const auto target = Model::load(test::fixture("models/gemma2_f32"));
  const auto sps = test::sps_and_pld_beside_vanilla(*target, test::fixture("gguf_models/gemma2_f32.q8_0.gguf"),
                                                test::repeating_prompts(1));
  // An 8-bit twin agrees with its source on a share of the drafted nodes (this random model's near ties part them
  // often; a drafter that did not compute the same network would all but never hit one of 2,757 tokens).
  EXPECT_GT(sps.accepted * 8, sps.drafted);
}

}  // namespace
}  // namespace specscope
