// OLMo 2 and OLMo 3 as the readers take them: published configs, the GGUF reader telling the two apart, the norms'
// widths, one family for both formats, and speculation on the fixtures staying lossless. (The forward itself is
// checked against transformers and llama.cpp by model_parity_test and gguf_model_test on olmo2_f32 and olmo3_f32;
// batch invariance by batch_invariance_test; every method by Methods.GreedyOutputEqualsVanillaOnOlmo.)
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/discovery/model_probe.h"
#include "engine/formats/gguf.h"
#include "engine/model/config.h"
#include "engine/model/gguf_config.h"
#include "engine/model/model.h"
#include "engine/util/error.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;

// allenai/OLMo-2-0425-1B's config.json (transformers 4.x: rope_theta and rope_scaling at the top), the keys the
// loader reads.
json olmo2_1b() {
  return json::parse(R"({"architectures": ["Olmo2ForCausalLM"], "attention_bias": false, "eos_token_id": 100257,
    "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192, "max_position_embeddings": 4096,
    "model_type": "olmo2", "num_attention_heads": 16, "num_hidden_layers": 16, "num_key_value_heads": 16,
    "pad_token_id": 100277, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 500000,
    "tie_word_embeddings": false, "torch_dtype": "float32", "vocab_size": 100352})");
}

// An OLMo 3 7B-shaped config.json as transformers 4.57 saves Olmo3Config (layer_types written out, the full-attention
// layers' YaRN in rope_scaling), the keys the loader reads.
json olmo3_7b() {
  json j = json::parse(R"({"architectures": ["Olmo3ForCausalLM"], "attention_bias": false, "eos_token_id": 100257,
    "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 11008, "max_position_embeddings": 65536,
    "model_type": "olmo3", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
    "pad_token_id": 100277, "rms_norm_eps": 1e-06, "rope_theta": 500000, "sliding_window": 4096,
    "rope_scaling": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192,
      "attention_factor": 1.2079441541679836, "beta_fast": 32, "beta_slow": 1},
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 100278})");
  for (int l = 0; l < 32; ++l) j["layer_types"].push_back((l + 1) % 4 ? "sliding_attention" : "full_attention");
  return j;
}

TEST(Olmo, Olmo2sPublishedConfigReadsAsTheModel) {
  const ModelConfig c = ModelConfig::from_json_text(olmo2_1b().dump(), "config.json");
  EXPECT_EQ(c.architecture, "Olmo2ForCausalLM");
  EXPECT_FALSE(c.pre_norms);
  EXPECT_TRUE(c.sandwich_norms && c.qk_norm && c.qk_norm_whole);
  EXPECT_EQ(c.qk_norm_width(false), 16 * 128);  // one norm over all 16 heads' queries
  EXPECT_EQ(c.qk_norm_width(true), 16 * 128);
  EXPECT_EQ(c.window_of(0), 0);
  EXPECT_EQ(c.rope_local_theta, 0.f);
  EXPECT_FLOAT_EQ(c.rope_theta, 500000.f);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-6f);
  EXPECT_EQ(c.norm_weight_offset, 0.f);  // OLMo's norms scale by w, not Gemma's 1 + w
  EXPECT_TRUE(c.extended_forward());
  // Olmo2Config's eps where the file names none.
  json bare = olmo2_1b();
  bare.erase("rms_norm_eps");
  EXPECT_FLOAT_EQ(ModelConfig::from_json_text(bare.dump(), "config.json").rms_norm_eps, 1e-5f);
  // A grouped-query OLMo 2 (the 32B's 40 heads on 8): the key norm is as wide as the keys.
  json gqa = olmo2_1b();
  gqa["num_key_value_heads"] = 4;
  EXPECT_EQ(ModelConfig::from_json_text(gqa.dump(), "config.json").qk_norm_width(true), 4 * 128);
}

TEST(Olmo, Olmo3sConfigReadsAsTheModel) {
  const ModelConfig c = ModelConfig::from_json_text(olmo3_7b().dump(), "config.json");
  EXPECT_EQ(c.architecture, "Olmo3ForCausalLM");
  EXPECT_FALSE(c.pre_norms);
  EXPECT_TRUE(c.qk_norm_whole);
  for (int l = 0; l < 32; ++l) EXPECT_EQ(c.window_of(l), (l + 1) % 4 ? 4096 : 0) << "layer " << l;
  // The sliding layers turn at the same theta without YaRN; the full-attention layers with it.
  EXPECT_TRUE(c.local_rope(0));
  EXPECT_FALSE(c.local_rope(3));
  EXPECT_FLOAT_EQ(c.rope_local_theta, 500000.f);
  EXPECT_EQ(c.rope_scaling.type, "yarn");
  EXPECT_FLOAT_EQ(c.rope_scaling.factor, 8.f);
  EXPECT_NEAR(rope_attention_factor(c), 1.2079441541679836, 1e-6);
  EXPECT_FLOAT_EQ(rope_attention_factor(c, true), 1.f);
  EXPECT_EQ(rope_inv_freq(c, true), rope_inv_freq(ModelConfig::from_json_text(olmo2_1b().dump(), "c.json")))
      << "OLMo 3's sliding layers turn as OLMo 2's (the same theta, head_dim 128)";
  EXPECT_NE(rope_inv_freq(c, false), rope_inv_freq(c, true));
  // Olmo3Config's own defaults where the file is silent: every fourth layer full, a window of 4,096.
  json bare = olmo3_7b();
  bare.erase("layer_types");
  bare.erase("sliding_window");
  const ModelConfig d = ModelConfig::from_json_text(bare.dump(), "config.json");
  EXPECT_EQ(d.layer_sliding, c.layer_sliding);
  EXPECT_EQ(d.window_of(0), 4096);
  // transformers 5 saves the RoPE per layer type (as the fixture's config): the same model.
  json v5 = olmo3_7b();
  v5.erase("rope_scaling");
  v5.erase("rope_theta");
  v5["rope_parameters"] = {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 500000.0}}},
                           {"full_attention", olmo3_7b()["rope_scaling"]}};
  v5["rope_parameters"]["full_attention"]["rope_theta"] = 500000.0;
  const ModelConfig e = ModelConfig::from_json_text(v5.dump(), "config.json");
  EXPECT_EQ(rope_inv_freq(e, false), rope_inv_freq(c, false));
  EXPECT_EQ(rope_inv_freq(e, true), rope_inv_freq(c, true));
  EXPECT_FLOAT_EQ(rope_attention_factor(e), rope_attention_factor(c));
}

TEST(Olmo, BadFieldsAreRefusedNamingThem) {
  json j = olmo3_7b();
  j["layer_types"][5] = "chunked_attention";
  test::expect_config_refused(j, "layer_types[5]");
  j = olmo3_7b();
  j["layer_types"].erase(0);
  test::expect_config_refused(j, "layer_types has 31 entries");
  j = olmo3_7b();
  j["sliding_window"] = 0;
  test::expect_config_refused(j, "sliding_window");
}

// The HF fixtures and their GGUF files: the readers agree on every part of the forward, and llama.cpp's one "olmo2"
// architecture reads as OLMo 3 where the file has a window.
TEST(Olmo, TheGgufReaderTellsOlmo3ByItsWindow) {
  for (const char* name : {"olmo2_f32", "olmo3_f32"}) {
    SCOPED_TRACE(name);
    const auto hf = Model::load(test::fixture(std::string("models/") + name));
    const ModelConfig g = config_from_gguf(GgufFile::open(test::fixture(std::string("gguf_models/") + name + ".f32.gguf")), false);
    const ModelConfig& c = hf->config();
    EXPECT_EQ(g.architecture, c.architecture);
    EXPECT_EQ(g.pre_norms, c.pre_norms);
    EXPECT_EQ(g.qk_norm_whole, c.qk_norm_whole);
    EXPECT_EQ(g.layer_sliding, c.layer_sliding);
    for (int l = 0; l < c.num_layers; ++l) EXPECT_EQ(g.window_of(l), c.window_of(l)) << "layer " << l;
    EXPECT_FLOAT_EQ(g.rope_local_theta, c.rope_local_theta);
    EXPECT_EQ(g.rope_scaling.type, c.rope_scaling.type);
    for (bool local : {false, true}) {
      if (local && c.rope_local_theta == 0.f) continue;  // OLMo 2: no sliding layers
      const auto a = rope_inv_freq(g, local), b = rope_inv_freq(c, local);
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6f * b[i]) << "frequency " << i;
      EXPECT_NEAR(rope_attention_factor(g, local), rope_attention_factor(c, local), 1e-6);
    }
  }
  // OLMo's layers have no norm before their sublayers, in either format: the loaders bind none.
  const auto m = Model::load(test::fixture("gguf_models/olmo3_f32.q8_0.gguf"));
  for (const auto& L : m->weights().layers) {
    EXPECT_TRUE(L.input_norm.empty() && L.post_attn_norm.empty());
    EXPECT_EQ(L.q_norm.size(), size_t(m->config().num_heads * m->config().head_dim));
    EXPECT_EQ(L.k_norm.size(), size_t(m->config().num_kv_heads * m->config().head_dim));
  }
}

// One family whichever format or generation a model comes in, so that a head made for a checkpoint pairs with its GGUF
// file (discovery's pairing).
TEST(Olmo, BothFormatsAndGenerationsAreOneFamily) {
  const std::string gguf = discovery::probe_model(test::fixture("gguf_models/olmo3_f32.q8_0.gguf")).family;
  EXPECT_EQ(gguf, "olmo2");
  EXPECT_EQ(discovery::probe_model(test::fixture("models/olmo2_f32")).family, gguf);
  EXPECT_EQ(discovery::probe_model(test::fixture("models/olmo3_f32")).family, gguf);
}

// `specscope-cli info` says where the norms are and which layers slide.
TEST(Olmo, InfoNamesTheNormsAndTheSlidingLayers) {
  auto r = test::run_cli("info --model " + test::fixture("models/olmo3_f32"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("norms          after each sublayer (none before); q and k over their whole projections"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sliding        a window of 6 on 3 of 4 layers (rope theta 500000 there)"), std::string::npos)
      << r.out;
  r = test::run_cli("info --model " + test::fixture("models/olmo2_f32") + " --json");
  const json j = test::json_in_output(r.out);
  EXPECT_EQ(j["norms"]["before_sublayers"], false) << r.out;
  EXPECT_EQ(j["norms"]["after_sublayers"], true);
  EXPECT_EQ(j["norms"]["qk"], "whole_projection");
  EXPECT_FALSE(j.contains("sliding"));
  r = test::run_cli("info --model " + test::fixture("models/qwen3_f32") + " --json");
  EXPECT_EQ(test::json_in_output(r.out)["norms"]["qk"], "per_head") << r.out;
}

// Speculation on OLMo targets: SpS drafting with each model's own Q8_0 GGUF twin, and prompt lookup, identical to
// vanilla.
TEST(Olmo, SpeculationIsLossless) {
  for (auto [source, draft] : {std::pair{"olmo2_f32", "olmo2_f32.q8_0.gguf"}, {"olmo3_f32", "olmo3_f32.q8_0.gguf"}}) {
    SCOPED_TRACE(source);
    const auto target = Model::load(test::fixture(std::string("models/") + source));
    const auto sps = test::sps_and_pld_beside_vanilla(*target, test::fixture(std::string("gguf_models/") + draft),
                                                      test::repeating_prompts(1));
    EXPECT_GT(sps.drafted, 0);
  }
}

}  // namespace
}  // namespace specscope
