// SmolLM3 as the readers take it: the published config, which layers go without RoPE in each format, bad fields
// refused naming them, what `info` says, and speculation on the fixture staying lossless. (The forward itself is checked
// against transformers and llama.cpp by model_parity_test and gguf_model_test on smollm3_f32; batch invariance by
// batch_invariance_test.)
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/formats/gguf.h"
#include "engine/model/config.h"
#include "engine/model/gguf_config.h"
#include "engine/model/model.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;

// HuggingFaceTB/SmolLM3-3B's config.json, the keys the loader reads (no_rope_layers written out by SmolLM3Config).
json smollm3_3b() {
  json j = json::parse(R"({"architectures": ["SmolLM3ForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
    "eos_token_id": 128012, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 11008,
    "max_position_embeddings": 65536, "model_type": "smollm3", "num_attention_heads": 16, "num_hidden_layers": 36,
    "num_key_value_heads": 4, "pad_token_id": 128004, "rms_norm_eps": 1e-06, "rope_scaling": null,
    "rope_theta": 5000000.0, "sliding_window": null, "use_sliding_window": false, "tie_word_embeddings": true,
    "torch_dtype": "bfloat16", "vocab_size": 128256})");
  for (int l = 0; l < 36; ++l) j["no_rope_layers"].push_back((l + 1) % 4 ? 1 : 0);
  return j;
}

TEST(SmolLM3, ThePublishedConfigReadsAsTheModel) {
  const ModelConfig c = ModelConfig::from_json_text(smollm3_3b().dump(), "config.json");
  EXPECT_EQ(c.architecture, "SmolLM3ForCausalLM");
  for (int l = 0; l < 36; ++l) EXPECT_EQ(c.rope_in(l), (l + 1) % 4 != 0) << "layer " << l;
  EXPECT_EQ(c.window_of(3), 0);
  EXPECT_TRUE(c.pre_norms);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(c.extended_forward());
  // SmolLM3Config's interval where the file lists no layers; another interval; sliding NoPE layers when asked.
  json bare = smollm3_3b();
  bare.erase("no_rope_layers");
  EXPECT_EQ(ModelConfig::from_json_text(bare.dump(), "config.json").layer_no_rope, c.layer_no_rope);
  bare["no_rope_layer_interval"] = 3;
  const ModelConfig d = ModelConfig::from_json_text(bare.dump(), "config.json");
  EXPECT_FALSE(d.rope_in(2));
  EXPECT_TRUE(d.rope_in(3));
  json sliding = smollm3_3b();
  sliding["use_sliding_window"] = true;
  sliding["sliding_window"] = 4096;
  const ModelConfig e = ModelConfig::from_json_text(sliding.dump(), "config.json");
  EXPECT_EQ(e.window_of(3), 4096);  // transformers' default layer_types: the NoPE layers slide
  EXPECT_EQ(e.window_of(0), 0);
}

TEST(SmolLM3, BadFieldsAreRefusedNamingThem) {
  json j = smollm3_3b();
  j["no_rope_layers"][7] = 2;
  test::expect_config_refused(j, "no_rope_layers[7]");
  j = smollm3_3b();
  j["no_rope_layers"].erase(0);
  test::expect_config_refused(j, "no_rope_layers must list one 0 or 1 for each of the 36 layers");
  j = smollm3_3b();
  j.erase("no_rope_layers");
  j["no_rope_layer_interval"] = 0;
  test::expect_config_refused(j, "no_rope_layer_interval");
}

// The GGUF file says nothing of its NoPE layers; llama.cpp's reader takes every fourth, and so does SpecScope's, which
// is the fixture's (and the published model's) own choice.
TEST(SmolLM3, TheGgufReaderTakesEveryFourthLayerWithoutRope) {
  const auto hf = Model::load(test::fixture("models/smollm3_f32"));
  const ModelConfig g = config_from_gguf(GgufFile::open(test::fixture("gguf_models/smollm3_f32.f32.gguf")), true);
  EXPECT_EQ(g.architecture, "SmolLM3ForCausalLM");
  EXPECT_EQ(g.layer_no_rope, hf->config().layer_no_rope);
  EXPECT_EQ(g.layer_no_rope, (std::vector<uint8_t>{0, 0, 0, 1}));
}

// The fixture's parity (model_parity_test: within 2e-6 of transformers) rests on its NoPE layer: the same checkpoint
// with RoPE in every layer, or in none, is far from transformers' logits.
TEST(SmolLM3, ParityDependsOnTheNoPeLayer) {
  auto worst_error = [](const Model& m) { return test::first_golden_prompt_error(m, "models/smollm3_f32/golden.json"); };
  EXPECT_LT(worst_error(*Model::load(test::fixture("models/smollm3_f32"))), 2e-5);
  const json config = json::parse(read_text_file(test::fixture("models/smollm3_f32/config.json")));
  for (int flag : {1, 0}) {
    SCOPED_TRACE(flag ? "RoPE in every layer" : "RoPE in none");
    json j = config;
    j["no_rope_layers"] = std::vector<int>(4, flag);
    const std::string dir = test::fixture_with_config("models/smollm3_f32", j);
    const double e = worst_error(*Model::load(dir));
    std::filesystem::remove_all(dir);
    std::printf("[ smollm3  ] %s: worst relative error %.3g\n", flag ? "RoPE everywhere" : "no RoPE", e);
    EXPECT_GT(e, 0.02);
  }
}

TEST(SmolLM3, InfoNamesTheLayersWithoutRope) {
  auto r = test::run_cli("info --model " + test::fixture("models/smollm3_f32"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("no rope        in 1 of 4 layers"), std::string::npos) << r.out;
  r = test::run_cli("info --model " + test::fixture("models/smollm3_f32") + " --json");
  EXPECT_EQ(test::json_in_output(r.out)["layers_without_rope"], 1) << r.out;
}

// Speculation on a target with a NoPE layer: SpS drafting with its own Q8_0 GGUF twin, and prompt lookup, identical to
// vanilla.
TEST(SmolLM3, SpeculationIsLossless) {
  const auto target = Model::load(test::fixture("models/smollm3_f32"));
  const auto sps = test::sps_and_pld_beside_vanilla(*target, test::fixture("gguf_models/smollm3_f32.q8_0.gguf"),
                                                    test::repeating_prompts(1));
  EXPECT_GT(sps.drafted, 0);
}

}  // namespace
}  // namespace specscope
