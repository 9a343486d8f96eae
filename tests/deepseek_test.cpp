// DeepSeek-V2/V3 (multi-head latent attention and DeepSeek's experts) as the readers take it: published configs,
// transformers' routing on random scores, bad fields refused naming them, what the CPU caches, and speculation on the
// fixtures staying lossless. (The forward itself is checked against transformers and llama.cpp by model_parity_test
// and gguf_model_test on deepseek_v2_f32 and deepseek_v3_f32; batch invariance by batch_invariance_test.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/discovery/model_probe.h"
#include "engine/formats/gguf.h"
#include "engine/model/config.h"
#include "engine/model/gguf_config.h"
#include "engine/model/expert_routing.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;

// deepseek-ai/DeepSeek-V2-Lite's config.json, the keys the loader reads (its auto_map and aux-loss keys left out).
json deepseek_v2_lite() {
  return json::parse(R"({"architectures": ["DeepseekV2ForCausalLM"], "attention_bias": false, "bos_token_id": 100000,
    "eos_token_id": 100001, "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048,
    "intermediate_size": 10944, "kv_lora_rank": 512, "max_position_embeddings": 163840, "model_type": "deepseek_v2",
    "moe_intermediate_size": 1408, "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2,
    "norm_topk_prob": false, "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 27,
    "num_key_value_heads": 16, "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "rms_norm_eps": 1e-06, "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
      "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096, "type": "yarn"},
    "rope_theta": 10000, "routed_scaling_factor": 1.0, "scoring_func": "softmax", "tie_word_embeddings": false,
    "topk_group": 1, "topk_method": "greedy", "torch_dtype": "bfloat16", "v_head_dim": 128, "vocab_size": 102400})");
}

// moonshotai/Moonlight-16B-A3B's config.json (a DeepseekV3ForCausalLM), the keys the loader reads.
json moonlight_16b_a3b() {
  return json::parse(R"({"architectures": ["DeepseekV3ForCausalLM"], "bos_token_id": 163584, "eos_token_id": 163585,
    "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 11264,
    "kv_lora_rank": 512, "max_position_embeddings": 8192, "model_type": "deepseek_v3", "moe_intermediate_size": 1408,
    "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2, "norm_topk_prob": true,
    "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 27, "num_key_value_heads": 16,
    "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-05,
    "rope_scaling": null, "rope_theta": 50000.0, "routed_scaling_factor": 2.446, "scoring_func": "sigmoid",
    "tie_word_embeddings": false, "topk_group": 1, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
    "v_head_dim": 128, "vocab_size": 163840})");
}

TEST(DeepSeek, V2LitesPublishedConfigReadsAsTheModel) {
  const ModelConfig c = ModelConfig::from_json_text(deepseek_v2_lite().dump(), "config.json");
  EXPECT_EQ(c.architecture, "DeepseekV2ForCausalLM");
  EXPECT_TRUE(c.mla());
  EXPECT_EQ(c.kv_lora_rank, 512);
  EXPECT_EQ(c.q_lora_rank, 0);
  EXPECT_EQ(c.head_dim, 192);
  EXPECT_EQ(c.rotary_dims(), 64);
  EXPECT_EQ(c.nope_dim(), 128);
  EXPECT_EQ(c.value_dim(), 128);
  EXPECT_EQ(c.num_kv_heads, 16);
  EXPECT_EQ(c.num_experts, 64);
  EXPECT_EQ(c.experts_per_token, 6);
  EXPECT_EQ(c.expert_ffn, 1408);
  EXPECT_EQ(c.shared_expert_ffn, 2 * 1408);
  EXPECT_FALSE(c.shared_expert_gated);
  EXPECT_EQ(c.expert_layers(), 26);
  EXPECT_FALSE(c.moe_layer(0));
  EXPECT_FALSE(c.expert_sigmoid);
  EXPECT_EQ(c.expert_groups, 0);  // greedy: no groups
  EXPECT_FALSE(c.norm_topk_prob);
  EXPECT_FLOAT_EQ(c.routed_scaling, 1.f);
  // YaRN over 40x the original 4,096 positions: the cosines and sines keep their size (mscale equals mscale_all_dim),
  // the scores grow by the mscale_all_dim term squared.
  EXPECT_EQ(c.rope_scaling.type, "yarn");
  EXPECT_FLOAT_EQ(rope_attention_factor(c), 1.f);
  const double m = 0.1 * 0.707 * std::log(40.0) + 1.0;
  EXPECT_NEAR(c.attention_scale(), m * m / std::sqrt(192.0), 1e-7);
}

TEST(DeepSeek, MoonlightsPublishedConfigReadsAsTheModel) {
  const ModelConfig c = ModelConfig::from_json_text(moonlight_16b_a3b().dump(), "config.json");
  EXPECT_EQ(c.architecture, "DeepseekV3ForCausalLM");
  EXPECT_EQ(c.q_lora_rank, 0);  // null, as V2-Lite's
  EXPECT_TRUE(c.expert_sigmoid);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_FLOAT_EQ(c.routed_scaling, 2.446f);
  EXPECT_EQ(c.expert_groups, 1);
  EXPECT_EQ(c.expert_groups_used, 1);
  EXPECT_EQ(c.rope_scaling.type, "none");
  EXPECT_NEAR(c.attention_scale(), 1.0 / std::sqrt(192.0), 1e-7);
  // V3's own defaults where the file is silent: DeepSeek-V3's q_lora_rank 1536, 8 groups of which 4 are used.
  json bare = moonlight_16b_a3b();
  for (const char* key : {"q_lora_rank", "n_group", "topk_group", "scoring_func", "topk_method"}) bare.erase(key);
  bare["n_routed_experts"] = 256;
  bare["num_experts_per_tok"] = 8;
  const ModelConfig d = ModelConfig::from_json_text(bare.dump(), "config.json");
  EXPECT_EQ(d.q_lora_rank, 1536);
  EXPECT_EQ(d.expert_groups, 8);
  EXPECT_EQ(d.expert_groups_used, 4);
  EXPECT_TRUE(d.expert_sigmoid && d.groups_by_top_two);
}

// transformers' DeepseekV2TopkRouter and DeepseekV3TopkRouter on random scores (make_deepseek_routing.py): greedy,
// group_limited_greedy (groups ranked by their best score), and V3's noaux_tc (sigmoid, a choice bias, groups ranked
// by their two best biased scores, renormalized or not, scaled).
// What the CPU caches of a token and layer: DeepSeek-V2-Lite's latent (512) and rotary key (64) as the key, the latent
// as the value: 1,088 floats where 16 heads of 192-wide keys and 128-wide values would take 5,120.
TEST(DeepSeek, TheCacheHoldsTheLatent) {
  const ModelConfig c = ModelConfig::from_json_text(deepseek_v2_lite().dump(), "config.json");
  EXPECT_EQ(c.cache_key_dim(), 576);
  EXPECT_EQ(c.cache_value_dim(), 512);
}

// The memory check counts what the loader copies: a checkpoint's kv_b key parts, transposed per head (a GGUF file's
// attn_k_b is read in place).
TEST(DeepSeek, TheMemoryCheckCountsTheTransposedKeyParts) {
  const auto m = Model::load(test::fixture("models/deepseek_v2_f32"));
  uint64_t copied = 0;
  for (const auto& L : m->weights().layers)
    for (const auto& k : L.k_b) copied += k.nbytes();
  EXPECT_EQ(copied, uint64_t(3 * 4 * 32 * 16 * 4));  // layers x heads x latent x nope x f32
  EXPECT_EQ(discovery::probe_model(test::fixture("models/deepseek_v2_f32")).copied_bytes, copied);
  EXPECT_EQ(discovery::probe_model(test::fixture("gguf_models/deepseek_v2_f32.f32.gguf")).copied_bytes, 0u);
}

// One family whichever format a model comes in, so that a head made for one pairs with the other (discovery).
TEST(DeepSeek, BothFormatsAreOneFamily) {
  const std::string gguf = discovery::probe_model(test::fixture("gguf_models/deepseek_v3_f32.q8_0.gguf")).family;
  EXPECT_EQ(gguf, "deepseek2");
  EXPECT_EQ(discovery::probe_model(test::fixture("models/deepseek_v2_f32")).family, gguf);
  EXPECT_EQ(discovery::probe_model(test::fixture("models/deepseek_v3_f32")).family, gguf);
}

TEST(DeepSeek, RoutingIsTransformers) {
  const json fx = json::parse(read_text_file(test::fixture("moe/deepseek_routing.json")));
  ASSERT_EQ(fx.at("cases").size(), 4u);
  for (const json& c : fx.at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const std::vector<float> bias = c.at("bias").get<std::vector<float>>();
    RoutingRule rule;
    rule.experts = c.at("experts").get<int>();
    rule.per_token = c.at("per_token").get<int>();
    rule.normalize = c.at("normalize").get<bool>();
    rule.sigmoid = c.at("sigmoid").get<bool>();
    rule.choice_bias = bias.empty() ? nullptr : bias.data();
    rule.groups = c.at("method") == "greedy" ? 0 : c.at("groups").get<int>();
    rule.groups_used = rule.groups > 0 ? c.at("used").get<int>() : 0;
    rule.groups_by_top_two = c.at("groups_by_top_two").get<bool>();
    rule.scale = c.at("scale").get<float>();
    std::vector<float> logits;
    for (const json& row : c.at("logits"))
      for (const json& x : row) logits.push_back(x.get<float>());
    const int rows = int(c.at("logits").size());
    ExpertRouting routing;
    routing.route(logits.data(), rows, rule);
    std::vector<std::vector<std::pair<int, float>>> got(static_cast<size_t>(rows));
    for (int e = 0; e < rule.experts; ++e)
      for (const ExpertRoute* r = routing.begin(e); r != routing.end(e); ++r) got[size_t(r->row)].push_back({e, r->weight});
    for (int r = 0; r < rows; ++r) {
      const json& want = c.at("chosen")[size_t(r)];
      const auto experts = want.at("experts").get<std::vector<int>>();
      const auto weights = want.at("weights").get<std::vector<float>>();
      ASSERT_EQ(got[size_t(r)].size(), experts.size()) << "row " << r;
      for (size_t k = 0; k < experts.size(); ++k) {
        EXPECT_EQ(got[size_t(r)][k].first, experts[k]) << "row " << r;
        EXPECT_NEAR(got[size_t(r)][k].second, weights[k], 1e-6 * std::max(1.f, std::fabs(weights[k]))) << "row " << r;
      }
    }
  }
}

TEST(DeepSeek, BadFieldsAreRefusedNamingThem) {
  json j = moonlight_16b_a3b();
  j["scoring_func"] = "sqrtsoftplus";
  test::expect_config_refused(j, "scoring_func");
  j = moonlight_16b_a3b();
  j["topk_method"] = "random";
  test::expect_config_refused(j, "topk_method");
  j = moonlight_16b_a3b();
  j["n_group"] = 5;  // 64 experts do not split into 5 groups
  j["topk_group"] = 2;
  test::expect_config_refused(j, "n_group");
  j = moonlight_16b_a3b();
  j["n_group"] = 8;
  j["topk_group"] = 1;  // one group of 8 experts cannot give 9
  j["num_experts_per_tok"] = 9;
  test::expect_config_refused(j, "topk_group");
  j = moonlight_16b_a3b();
  j["rope_interleave"] = false;
  test::expect_config_refused(j, "rope_interleave");
  j = deepseek_v2_lite();
  j["qk_rope_head_dim"] = 63;
  test::expect_config_refused(j, "qk_rope_head_dim");
  j = deepseek_v2_lite();
  j["qk_nope_head_dim"] = 127;
  test::expect_config_refused(j, "qk_nope_head_dim");
  j = deepseek_v2_lite();
  j["kv_lora_rank"] = 0;
  test::expect_config_refused(j, "kv_lora_rank");
  j = deepseek_v2_lite();
  j["attention_bias"] = true;
  test::expect_config_refused(j, "attention_bias");
}

// A GGUF file that keeps its multi-token-prediction block after the layers (GLM-4.7-Flash's conversions) counts it in
// block_count and says so in nextn_predict_layers: the model is the layers before it, as llama.cpp runs them.
TEST(DeepSeek, AGgufMtpBlockIsNotALayer) {
  const GgufFile plain = GgufFile::open(test::fixture("gguf_models/deepseek_v2_f32.f32.gguf"));
  const GgufFile mtp = GgufFile::open(test::fixture("gguf_models/metadata/deepseek2_mtp.gguf"));
  EXPECT_EQ(mtp.get_int("deepseek2.block_count"), 4);
  const ModelConfig a = config_from_gguf(plain, false), b = config_from_gguf(mtp, false);
  EXPECT_EQ(a.num_layers, 3);
  EXPECT_EQ(b.num_layers, 3);
  EXPECT_EQ(b.moe_layers, a.moe_layers);
}

// Speculation on a latent-attention target: every verification batch runs its rows' absorbed queries over the cache
// together, and greedy output stays vanilla's (SpS drafting with the model's own Q8_0 GGUF twin, and prompt lookup).
TEST(DeepSeek, SpeculationIsLossless) {
  for (auto [source, draft] : {std::pair{"deepseek_v2_f32", "deepseek_v2_f32.q8_0.gguf"},
                               {"deepseek_v3_f32", "deepseek_v3_f32.q8_0.gguf"}}) {
    SCOPED_TRACE(source);
    const auto target = Model::load(test::fixture(std::string("models/") + source));
    const auto sps = test::sps_and_pld_beside_vanilla(*target, test::fixture(std::string("gguf_models/") + draft),
                                                      test::repeating_prompts(1));
    EXPECT_GT(sps.drafted, 0);
  }
}

// Speculative Streaming's multi-stream forward is Llama attention's; on a latent-attention model it is refused by name.
TEST(DeepSeek, StreamingIsRefusedByName) {
  const auto m = Model::load(test::fixture("models/deepseek_v2_f32"));
  auto ctx = m->new_cpu_context(64);
  Batch b = Batch::causal(std::vector<int32_t>{1, 2, 3});
  b.streaming = StreamingRequest{};
  ForwardOutput out;
  try {
    ctx->forward(b, out);
    ADD_FAILURE() << "a streaming forward ran on a latent-attention model";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("multi-head latent attention"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace specscope
