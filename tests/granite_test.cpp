// IBM's Granite (GraniteForCausalLM; llama.cpp's "granite"): Llama's network with four multipliers. Their parity with
// transformers and llama.cpp is in model_parity_test (granite_f32) and gguf_model_test (its GGUF files); here: how
// the multipliers are read and refused, and speculation on the family staying lossless.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/model/config.h"
#include "engine/model/model.h"
#include "engine/util/mapped_file.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;

json fixture_config() {
  return json::parse(read_text_file(test::fixture("models/granite_f32/config.json")));
}

TEST(Granite, ConfigAndGgufReadTheSameMultipliers) {
  const auto hf = Model::load(test::fixture("models/granite_f32"));
  const auto gguf = Model::load(test::fixture("gguf_models/granite_f32.f32.gguf"));
  for (const ModelConfig* c : {&hf->config(), &gguf->config()}) {
    SCOPED_TRACE(c->model_type);
    EXPECT_EQ(c->architecture, "GraniteForCausalLM");
    EXPECT_FLOAT_EQ(c->embed_scale, 12.f);
    EXPECT_FLOAT_EQ(c->attention_scale(), 0.0625f);  // attention_multiplier, not 1/sqrt(16)
    EXPECT_FLOAT_EQ(c->residual_scale, 0.22f);
    EXPECT_FLOAT_EQ(c->logit_scale, 8.f);
    EXPECT_EQ(c->head_dim, 16);  // derived: the config has no head_dim
    EXPECT_TRUE(c->extended_forward());
  }
}

// transformers' GraniteConfig defaults every multiplier to 1: a config without them is a Llama.
TEST(Granite, MissingMultipliersAreOne) {
  json j = fixture_config();
  for (const char* key : {"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"})
    j.erase(key);
  const ModelConfig c = ModelConfig::from_json_text(j.dump(), "config.json");
  EXPECT_EQ(c.architecture, "GraniteForCausalLM");
  EXPECT_FLOAT_EQ(c.embed_scale, 1.f);
  EXPECT_FLOAT_EQ(c.attention_scale(), 1.f);
  EXPECT_FLOAT_EQ(c.residual_scale, 1.f);
  EXPECT_FLOAT_EQ(c.logit_scale, 1.f);
}

TEST(Granite, NonPositiveMultiplierIsRefusedNamingIt) {
  for (const char* key : {"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"})
    for (double bad : {0.0, -2.0}) {
      json j = fixture_config();
      j[key] = bad;
      SCOPED_TRACE(std::string(key) + " = " + std::to_string(bad));
      test::expect_config_refused(j, key);
    }
}

// The CLI's answer to such a checkpoint: one line naming the file and the field, exit code 2.
TEST(Granite, CliRefusesZeroLogitsScalingWithExitCode2) {
  json j = fixture_config();
  j["logits_scaling"] = 0;
  test::expect_cli_refuses_config("models/granite_f32", j, "'logits_scaling' must be a positive number");
}

// Greedy speculation on Granite gives vanilla's tokens, with the multipliers in both the drafter's and the target's
// forwards: SpS drafting with the Q8_0 GGUF file (accepting most drafts) and prompt lookup.
TEST(Granite, SpeculationIsLossless) {
  const auto target = Model::load(test::fixture("models/granite_f32"));
  const auto sps = test::sps_and_pld_beside_vanilla(*target, test::fixture("gguf_models/granite_f32.q8_0.gguf"),
                                                test::repeating_prompts(3000));
  EXPECT_GT(sps.accepted * 2, sps.drafted);  // an 8-bit twin agrees with its source most of the time
}

}  // namespace
}  // namespace specscope
