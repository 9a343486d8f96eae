// Mixtures of experts (Mixtral, Qwen2-MoE, Qwen3-MoE; llama.cpp's qwen2moe, qwen3moe and llama files with
// expert_count). Parity with transformers and llama.cpp is in model_parity_test (qwen3moe_f32, qwen3moe_mixed_f32,
// mixtral_f32, qwen2moe_f32) and
// gguf_model_test (their GGUF files); batch invariance in batch_invariance_test. Here: the routing against a plain
// reference, how configs and GGUF metadata are read and refused, that the fixtures' parity depends on the routing,
// and speculation on them staying lossless.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/methods/factory.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/config.h"
#include "engine/model/expert_routing.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/util/mapped_file.h"
#include "runs/cost_model.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;

json fixture_config(const std::string& name) {
  return json::parse(read_text_file(test::fixture("models/" + name + "/config.json")));
}

// Qwen/Qwen3-30B-A3B's config.json as published (transformers 4.51).
json released_qwen3_30b_a3b() {
  return json::parse(R"({
    "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 151643,
    "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048,
    "initializer_range": 0.02, "intermediate_size": 6144, "max_position_embeddings": 40960, "max_window_layers": 48,
    "mlp_only_layers": [], "model_type": "qwen3_moe", "moe_intermediate_size": 768, "norm_topk_prob": true,
    "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48,
    "num_key_value_heads": 4, "output_router_logits": false, "rms_norm_eps": 1e-06, "rope_scaling": null,
    "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "sliding_window": null, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false,
    "vocab_size": 151936})");
}

// mistralai/Mixtral-8x7B-Instruct-v0.1's config.json as published.
json released_mixtral_8x7b() {
  return json::parse(R"({
    "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
    "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32, "num_experts_per_tok": 2,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8, "output_router_logits": false,
    "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02, "sliding_window": null,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.36.0.dev0", "use_cache": true,
    "vocab_size": 32000})");
}

// Qwen/Qwen1.5-MoE-A2.7B's config.json values (transformers 4.40): 60 experts, 4 per token, a shared expert, no
// attention_bias key (Qwen2-MoE always has q/k/v biases).
json released_qwen15_moe_a27b() {
  return json::parse(R"({
    "architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151643,
    "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5632,
    "max_position_embeddings": 8192, "max_window_layers": 21, "model_type": "qwen2_moe", "num_attention_heads": 16,
    "num_hidden_layers": 24, "num_key_value_heads": 16, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 32768, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.40.0.dev0",
    "use_cache": true, "use_sliding_window": false, "vocab_size": 151936, "decoder_sparse_step": 1,
    "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts_per_tok": 4,
    "num_experts": 60, "norm_topk_prob": false, "output_router_logits": false, "router_aux_loss_coef": 0.001})");
}

// The experts a config describes: how many, how many a token takes, how wide, the shared expert's width (0: none)
// and whether the chosen ones' weights are renormalized.
struct Experts {
  int count, per_token, ffn, shared_ffn;
  bool renormalized;
};
void expect_experts(const ModelConfig& c, const Experts& want) {
  EXPECT_EQ(c.num_experts, want.count);
  EXPECT_EQ(c.experts_per_token, want.per_token);
  EXPECT_EQ(c.expert_ffn, want.ffn);
  EXPECT_EQ(c.shared_expert_ffn, want.shared_ffn);
  EXPECT_EQ(c.norm_topk_prob, want.renormalized);
}

// The routing as transformers writes it, in double: softmax, the k largest (lower index first among equals), and
// the weights divided by their sum when asked.
std::vector<std::pair<int, double>> reference_route(const std::vector<float>& logits, int k, bool normalize) {
  const double mx = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t e = 0; e < logits.size(); ++e) sum += p[e] = std::exp(double(logits[e]) - mx);
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[size_t(a)] > p[size_t(b)]; });
  std::vector<std::pair<int, double>> out;
  double chosen = 0;
  for (int i = 0; i < k; ++i) chosen += p[size_t(order[size_t(i)])] / sum;
  for (int i = 0; i < k; ++i) {
    const double w = p[size_t(order[size_t(i)])] / sum;
    out.push_back({order[size_t(i)], normalize ? w / chosen : w});
  }
  return out;
}

TEST(ExpertRouting, MatchesTheReferenceAndGroupsRowsByExpert) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 2.f);
  for (auto [experts, k] : {std::pair{8, 2}, {128, 8}, {4, 4}, {1, 1}})
    for (bool normalize : {true, false}) {
      SCOPED_TRACE(std::to_string(experts) + " experts, " + std::to_string(k) + (normalize ? " normalized" : ""));
      const int rows = 9;
      std::vector<float> logits(size_t(rows) * size_t(experts));
      for (float& x : logits) x = normal(rng);
      if (experts >= 4) logits[2] = logits[3];  // a tie in row 0: the lower index goes first
      const std::vector<float> kept = logits;
      ExpertRouting routing;
      routing.route(logits.data(), rows, experts, k, normalize);
      ASSERT_EQ(routing.experts(), experts);
      int total = 0, hit = 0;
      for (int e = 0; e < experts; ++e) {
        total += routing.count(e);
        hit += routing.count(e) > 0;
        int last_row = -1;
        for (const ExpertRoute* r = routing.begin(e); r != routing.end(e); ++r) {
          EXPECT_GT(r->row, last_row) << "rows of expert " << e << " out of order";
          last_row = r->row;
        }
      }
      EXPECT_EQ(total, rows * k);
      EXPECT_EQ(routing.experts_hit(), hit);
      for (int row = 0; row < rows; ++row) {
        const auto want = reference_route(
            std::vector<float>(kept.begin() + row * experts, kept.begin() + (row + 1) * experts), k, normalize);
        for (const auto& [e, w] : want) {
          const ExpertRoute* r = std::find_if(routing.begin(e), routing.end(e), [&](const ExpertRoute& x) { return x.row == row; });
          ASSERT_NE(r, routing.end(e)) << "row " << row << " did not go to expert " << e;
          EXPECT_NEAR(r->weight, w, 1e-6) << "row " << row << " expert " << e;
        }
      }
    }
}

TEST(Moe, ConfigsAndGgufFilesReadTheSameModels) {
  for (const char* name : {"qwen3moe_f32", "mixtral_f32"}) {
    SCOPED_TRACE(name);
    const std::string file = std::string(name) + (std::string(name) == "mixtral_f32" ? ".q4_0.gguf" : ".q8_0.gguf");
    const auto hf = Model::load(test::fixture(std::string("models/") + name));
    const auto gguf = Model::load(test::fixture("gguf_models/" + file));
    const bool qwen = std::string(name) == "qwen3moe_f32";
    for (const ModelConfig* c : {&hf->config(), &gguf->config()}) {
      EXPECT_EQ(c->architecture, qwen ? "Qwen3MoeForCausalLM" : "MixtralForCausalLM");
      expect_experts(*c, {qwen ? 8 : 4, 2, 32, 0, true});
      EXPECT_EQ(c->moe_layers, (std::vector<uint8_t>{1, 1}));
      EXPECT_EQ(c->qk_norm, qwen);
      EXPECT_NE(c->summary().find("experts=2/"), std::string::npos);
    }
    for (const auto* m : {hf.get(), gguf.get()})
      for (const auto& L : m->weights().layers) {
        ASSERT_EQ(L.experts.size(), size_t(m->config().num_experts));
        EXPECT_EQ(L.router.shape, (std::vector<int64_t>{m->config().num_experts, 64}));
        EXPECT_EQ(L.experts.back().down.shape, (std::vector<int64_t>{64, 32}));
        EXPECT_EQ(L.w_gate.data, nullptr);  // no dense MLP beside the experts
      }
  }
}

// Qwen2-MoE's shared expert, from the Hugging Face folder and from both GGUF files (its gate a vector of H in the f32
// file, a quantized [1, H] matrix in the q8_0 one): the same config, the shared expert and its gate bound in every
// expert layer, and the chosen experts' weights left as the softmax gives them (transformers' and llama.cpp's
// qwen2moe). Their logits against transformers are model_parity_test's and gguf_model_test's.
TEST(Moe, Qwen2MoeSharedExpertReadsAlikeFromBothFormats) {
  std::vector<std::shared_ptr<const Model>> models;
  models.push_back(Model::load(test::fixture("models/qwen2moe_f32")));
  for (const char* f : {"qwen2moe_f32.f32.gguf", "qwen2moe_f32.q8_0.gguf"})
    models.push_back(Model::load(test::fixture(std::string("gguf_models/") + f)));
  for (const auto& m : models) {
    SCOPED_TRACE(m->identity().path);
    const ModelConfig& c = m->config();
    EXPECT_EQ(c.architecture, "Qwen2MoeForCausalLM");
    EXPECT_EQ(c.model_type, "qwen2_moe");
    expect_experts(c, {8, 2, 32, 64, false});
    EXPECT_TRUE(c.attention_bias);
    EXPECT_FALSE(c.qk_norm);
    EXPECT_NE(c.summary().find("shared_expert_ffn=64"), std::string::npos);
    for (const auto& L : m->weights().layers) {
      ASSERT_TRUE(L.has_shared_expert());
      EXPECT_EQ(L.shared_expert.gate.shape, (std::vector<int64_t>{64, 64}));
      EXPECT_EQ(L.shared_expert.down.shape, (std::vector<int64_t>{64, 64}));
      EXPECT_EQ(L.shared_expert_gate.size(), 64u);
      EXPECT_FALSE(L.bq.empty());
      EXPECT_TRUE(L.bo.empty());
    }
  }
  // The Q8_0 file's gate is its dequantized row: the same up to Q8_0's rounding (a scale per 32 values).
  const auto& exact = models[0]->weights().layers[0].shared_expert_gate;
  const auto& q8 = models[2]->weights().layers[0].shared_expert_gate;
  EXPECT_EQ(models[1]->weights().layers[0].shared_expert_gate, exact);
  EXPECT_NE(q8, exact);
  for (size_t i = 0; i < exact.size(); ++i) EXPECT_NEAR(q8[i], exact[i], 0.02) << i;
  // The other mixtures have none.
  EXPECT_FALSE(Model::load(test::fixture("models/qwen3moe_f32"))->weights().layers[0].has_shared_expert());
}

// Mixtral as llama.cpp wrote it until April 2024 (TheBloke's Mixtral files; llama.cpp no longer reads them): one
// tensor per expert and matrix (blk.N.ffn_gate.E.weight ...). The same Q4_0 weights as the stacked file give the same
// logits bit for bit, and the models listing's dry check calls the file loadable.
TEST(Moe, TheOlderGgufLayoutWithATensorPerExpertReadsTheSameModel) {
  const auto stacked = Model::load(test::fixture("gguf_models/mixtral_f32.q4_0.gguf"));
  const auto per_expert = Model::load(test::fixture("gguf_models/mixtral_f32_per_expert.q4_0.gguf"));
  expect_experts(per_expert->config(), {4, 2, 32, 0, true});
  EXPECT_EQ(per_expert->config().architecture, "MixtralForCausalLM");
  for (const auto& L : per_expert->weights().layers) {
    ASSERT_EQ(L.experts.size(), 4u);
    EXPECT_EQ(L.experts[3].down.shape, (std::vector<int64_t>{64, 32}));
    EXPECT_EQ(L.experts[3].down.dtype, DType::Q4_0);
  }
  const std::vector<int32_t> prompt = {1, 40, 7, 300, 12, 9, 77, 5};
  std::vector<std::vector<float>> logits;
  for (const auto* m : {stacked.get(), per_expert.get()}) {
    auto ctx = m->new_cpu_context(64);
    ForwardOutput out;
    ctx->forward(Batch::causal(prompt), out);
    logits.push_back(out.logits);
  }
  ASSERT_FALSE(logits[0].empty());
  EXPECT_EQ(logits[0], logits[1]);
  auto r = test::run_cli("info --model " + test::fixture("gguf_models/mixtral_f32_per_expert.q4_0.gguf") + " --json");
  EXPECT_EQ(test::json_in_output(r.out)["loadable"], true) << r.out;
}

TEST(Moe, PublishedConfigsParse) {
  const ModelConfig q = ModelConfig::from_json_text(released_qwen3_30b_a3b().dump(), "q/config.json");
  expect_experts(q, {128, 8, 768, 0, true});
  EXPECT_EQ(q.intermediate_size, 6144);
  EXPECT_EQ(std::count(q.moe_layers.begin(), q.moe_layers.end(), 1), 48);
  EXPECT_TRUE(q.qk_norm);
  const ModelConfig m = ModelConfig::from_json_text(released_mixtral_8x7b().dump(), "m/config.json");
  expect_experts(m, {8, 2, 14336, 0, true});
  EXPECT_FALSE(m.sliding_window.has_value());
  const ModelConfig q15 = ModelConfig::from_json_text(released_qwen15_moe_a27b().dump(), "q15/config.json");
  expect_experts(q15, {60, 4, 1408, 5632, false});
  EXPECT_TRUE(q15.attention_bias);
  EXPECT_FALSE(q15.sliding_window.has_value());  // use_sliding_window false
  EXPECT_EQ(q15.expert_layers(), 24);
  // Keys left out take Qwen2MoeConfig's defaults (Qwen1.5-MoE-A2.7B's sizes); qkv_bias false drops the biases.
  json bare = released_qwen15_moe_a27b();
  for (const char* key : {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size",
                          "norm_topk_prob"})
    bare.erase(key);
  expect_experts(ModelConfig::from_json_text(bare.dump(), "d/config.json"), {60, 4, 1408, 5632, false});
  bare["qkv_bias"] = false;
  EXPECT_FALSE(ModelConfig::from_json_text(bare.dump(), "d/config.json").attention_bias);
  // A dense Qwen3 or Llama has no experts.
  EXPECT_FALSE(ModelConfig::from_json_text(fixture_config("qwen3_f32").dump(), "q3/config.json").moe());
}

TEST(Moe, SparseStepAndDenseLayersFollowTransformers) {
  json j = released_qwen3_30b_a3b();
  j["num_hidden_layers"] = 6;
  j["decoder_sparse_step"] = 2;
  j["mlp_only_layers"] = {3};
  // transformers: experts where the layer is not listed and (layer + 1) % step == 0.
  EXPECT_EQ(ModelConfig::from_json_text(j.dump(), "q/config.json").moe_layers, (std::vector<uint8_t>{0, 1, 0, 0, 0, 1}));
  j.erase("norm_topk_prob");
  EXPECT_FALSE(ModelConfig::from_json_text(j.dump(), "q/config.json").norm_topk_prob);  // Qwen3MoeConfig's default
  // transformers 5 writes the count as num_local_experts.
  j.erase("num_experts");
  j["num_local_experts"] = 16;
  EXPECT_EQ(ModelConfig::from_json_text(j.dump(), "q/config.json").num_experts, 16);
  EXPECT_EQ(ModelConfig::from_json_text(fixture_config("qwen3moe_mixed_f32").dump(), "m/config.json").moe_layers,
            (std::vector<uint8_t>{1, 0, 1}));
}

TEST(Moe, BadExpertFieldsAreRefusedNamingThem) {
  auto with = [](json j, const char* key, json value) {
    j[key] = std::move(value);
    return j;
  };
  const json q = released_qwen3_30b_a3b();
  test::expect_config_refused(with(q, "num_experts_per_tok", 129), "'num_experts_per_tok' is 129 (expected 1..128");
  test::expect_config_refused(with(q, "num_experts_per_tok", 0), "'num_experts_per_tok' is 0");
  test::expect_config_refused(with(q, "num_experts", 0), "'num_experts' is 0");
  test::expect_config_refused(with(q, "num_experts", 100000), "'num_experts' is 100000");
  test::expect_config_refused(with(q, "moe_intermediate_size", 0), "'moe_intermediate_size' must be positive");
  test::expect_config_refused(with(q, "decoder_sparse_step", 0), "'decoder_sparse_step' must be positive");
  test::expect_config_refused(with(q, "mlp_only_layers", json::array({48})), "'mlp_only_layers' holds 48");
  test::expect_config_refused(with(q, "mlp_only_layers", "all"), "'mlp_only_layers' must be a list");
  test::expect_config_refused(with(q, "norm_topk_prob", "yes"), "'norm_topk_prob' must be true or false");
  test::expect_config_refused(with(released_mixtral_8x7b(), "num_local_experts", 1 << 20), "'num_local_experts'");
  test::expect_config_refused(with(released_qwen15_moe_a27b(), "shared_expert_intermediate_size", 0),
                              "'shared_expert_intermediate_size' must be positive");
}

TEST(Moe, CliRefusesMoreExpertsPerTokenThanExpertsWithExitCode2) {
  json j = fixture_config("mixtral_f32");
  j["num_experts_per_tok"] = 5;
  test::expect_cli_refuses_config("models/mixtral_f32", j, "'num_experts_per_tok' is 5 (expected 1..4");
}

// The fixtures' parity (model_parity_test: within 2e-6 of transformers) rests on the routing: the same checkpoint
// with its chosen experts' weights left unnormalized, or with one more expert per token, is far from transformers.
TEST(Moe, ParityDependsOnTheRouting) {
  for (const char* name : {"qwen3moe_f32", "qwen2moe_f32"}) {
    SCOPED_TRACE(name);
    const std::string golden = std::string("models/") + name + "/golden.json";
    auto worst_error = [&](const Model& m) { return test::first_golden_prompt_error(m, golden); };
    EXPECT_LT(worst_error(*Model::load(test::fixture(std::string("models/") + name))), 1e-5);
    const json base = fixture_config(name);
    for (auto [key, value] : {std::pair<const char*, json>{"norm_topk_prob", !base["norm_topk_prob"].get<bool>()},
                              {"num_experts_per_tok", 3}}) {
      SCOPED_TRACE(key);
      json j = base;
      j[key] = value;
      const std::string dir = test::fixture_with_config(std::string("models/") + name, j);
      const double e = worst_error(*Model::load(dir));
      std::filesystem::remove_all(dir);
      std::printf("[ moe      ] %s with %s = %s: worst relative error %.3g\n", name, key, value.dump().c_str(), e);
      EXPECT_GT(e, 0.02);
    }
  }
}

// What a forward's expert layers computed (Context::experts_computed, `bench`'s experts per layer): a one-token step
// takes experts_per_token experts in each layer; a batch of n rows at least that and at most n times as many, and
// never more than the layer has.
TEST(Moe, ForwardsCountTheExpertsTheyCompute) {
  const auto m = Model::load(test::fixture("models/qwen3moe_f32"));  // 2 expert layers, 2 of 8 experts per token
  auto ctx = m->new_cpu_context(64);
  ForwardOutput out;
  ctx->forward(Batch::causal(std::vector<int32_t>{1, 40, 7, 300, 12, 9}), out);
  uint64_t before = ctx->experts_computed;
  ctx->forward(Batch::causal(std::vector<int32_t>{77}), out);
  EXPECT_EQ(ctx->experts_computed - before, 2u * 2u);
  before = ctx->experts_computed;
  ctx->forward(Batch::causal(std::vector<int32_t>{5, 600, 31, 2000, 8}), out);
  const uint64_t five = ctx->experts_computed - before;
  EXPECT_GE(five, 2u * 2u);
  EXPECT_LE(five, 2u * 8u);
  EXPECT_GT(five, 2u * 2u) << "five different tokens all took the same two experts in both layers";
  // Qwen2-MoE's shared expert runs on every token and is not counted: a one-token step still takes 2 routed experts.
  const auto shared = Model::load(test::fixture("models/qwen2moe_f32"));
  auto sctx = shared->new_cpu_context(64);
  sctx->forward(Batch::causal(std::vector<int32_t>{1, 40, 7}), out);
  before = sctx->experts_computed;
  sctx->forward(Batch::causal(std::vector<int32_t>{77}), out);
  EXPECT_EQ(sctx->experts_computed - before, 2u * 2u);
  const auto dense = Model::load(test::fixture("models/qwen3_f32"));
  auto dctx = dense->new_cpu_context(64);
  dctx->forward(Batch::causal(std::vector<int32_t>{1, 40, 7}), out);
  EXPECT_EQ(dctx->experts_computed, 0u);
}

// `specscope-cli info` says what the experts are, from a Hugging Face folder (as the engine read it) and from a GGUF
// file's metadata.
TEST(Moe, InfoNamesTheExperts) {
  auto r = test::run_cli("info --model " + test::fixture("models/qwen3moe_mixed_f32") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = test::json_in_output(r.out);
  ASSERT_TRUE(j.contains("experts")) << r.out;
  EXPECT_EQ(j["experts"]["count"], 8);
  EXPECT_EQ(j["experts"]["per_token"], 3);
  EXPECT_EQ(j["experts"]["layers"], 2);
  EXPECT_EQ(j["experts"]["renormalized"], false);
  r = test::run_cli("info --model " + test::fixture("models/mixtral_f32"));
  EXPECT_NE(r.out.find("experts        2 of 4 per token (ffn 32, weights renormalized) in 2 of 2 layers"),
            std::string::npos) << r.out;
  r = test::run_cli("info --model " + test::fixture("gguf_models/qwen3moe_f32.q8_0.gguf") + " --json");
  j = test::json_in_output(r.out);
  EXPECT_EQ(j["experts"], 8) << r.out;
  EXPECT_EQ(j["experts_per_token"], 2) << r.out;
  EXPECT_EQ(j["loadable"], true) << r.out;
  EXPECT_FALSE(test::run_cli("info --model " + test::fixture("models/qwen3_f32") + " --json").out.find("\"experts\"") !=
               std::string::npos);
  // Qwen2-MoE's shared expert, as the engine read the folder and as the GGUF metadata says.
  r = test::run_cli("info --model " + test::fixture("models/qwen2moe_f32"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("shared expert  ffn 64, every token, scaled by sigmoid of its gate"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weights as the softmax gives them"), std::string::npos) << r.out;
  r = test::run_cli("info --model " + test::fixture("models/qwen2moe_f32") + " --json");
  EXPECT_EQ(test::json_in_output(r.out)["experts"]["shared_expert_ffn"], 64) << r.out;
  r = test::run_cli("info --model " + test::fixture("gguf_models/qwen2moe_f32.q8_0.gguf"));
  EXPECT_NE(r.out.find("expert_shared_feed_forward_length 64"), std::string::npos) << r.out;
  r = test::run_cli("info --model " + test::fixture("gguf_models/qwen2moe_f32.q8_0.gguf") + " --json");
  j = test::json_in_output(r.out);
  EXPECT_EQ(j["shared_expert_ffn"], 64) << r.out;
  EXPECT_EQ(j["loadable"], true) << r.out;
}

// Greedy speculation on a mixture of experts gives vanilla's tokens, though each tree row takes its own experts:
// SpS drafting with the 8-bit (Qwen3-MoE, Qwen2-MoE) and 4-bit (Mixtral) GGUF files, and prompt lookup.
TEST(Moe, SpeculationIsLossless) {
  for (auto [source, draft] : {std::pair{"qwen3moe_f32", "qwen3moe_f32.q8_0.gguf"}, {"mixtral_f32", "mixtral_f32.q4_0.gguf"},
                               {"qwen2moe_f32", "qwen2moe_f32.q8_0.gguf"}}) {
    SCOPED_TRACE(source);
    const auto target = Model::load(test::fixture(std::string("models/") + source));
    const auto sps = test::sps_and_pld_beside_vanilla(*target, test::fixture(std::string("gguf_models/") + draft),
                                                      test::repeating_prompts(1));
    EXPECT_GT(sps.accepted * 8, sps.drafted);  // a quantized twin agrees often; an unrelated drafter almost never
  }
}

// Each step records the experts its target forward ran per expert layer (StepRecord::experts_per_layer, session
// schema 6): at least the k one token picks, at most what its rows could pick and never more than the layer has; a
// step that verified one token exactly k. The cost model's step line and verdict say it. A dense target records none.
TEST(Moe, StepsRecordTheExpertsTheirForwardRan) {
  const auto target = Model::load(test::fixture("models/qwen3moe_f32"));  // 8 experts, 2 per token, 2 layers
  const double k = target->config().experts_per_token, experts = target->config().num_experts;
  MethodSpec spec;
  spec.name = "sps";
  spec.draft_path = test::fixture("gguf_models/qwen3moe_f32.q8_0.gguf");
  auto method = make_method(spec, *target);
  auto ctx = target->new_cpu_context(0);
  GenerateOptions opts;
  opts.max_tokens = 24;
  opts.stop_at_eos = false;
  const auto res = generate_speculative(*target, *ctx, *method, test::repeating_prompts(1).at(0), opts);
  ASSERT_GE(res.steps.size(), 3u);
  bool wider = false;
  for (const StepRecord& st : res.steps) {
    SCOPED_TRACE("step " + std::to_string(st.step));
    ASSERT_FALSE(std::isnan(st.experts_per_layer));
    EXPECT_GE(st.experts_per_layer, k);
    EXPECT_LE(st.experts_per_layer, std::min(experts, k * st.target_tokens));
    if (st.target_tokens == 1) EXPECT_EQ(st.experts_per_layer, k);
    wider = wider || (st.root_token >= 0 && st.experts_per_layer > k);
  }
  EXPECT_TRUE(wider) << "no verification of several rows reached more experts than one token picks";

  runs::StepCost curve;
  curve.ms = {{1, 1.0}, {8, 3.0}};
  const auto cost = runs::model_run_cost(res.steps, curve);
  EXPECT_GT(cost.mean_experts_per_layer, k);
  EXPECT_LE(cost.mean_experts_per_layer, experts);
  EXPECT_NE(cost.verdict.find("mixture of experts"), std::string::npos) << cost.verdict;
  EXPECT_NE(runs::describe_step(cost.steps.at(0)).find("experts per layer"), std::string::npos);

  const auto dense = Model::load(test::fixture("models/qwen3_f32"));
  auto dense_method = make_method(MethodSpec{"pld", "", "", {}}, *dense);
  auto dense_ctx = dense->new_cpu_context(0);
  const auto plain = generate_speculative(*dense, *dense_ctx, *dense_method, test::repeating_prompts(1).at(0), opts);
  for (const StepRecord& st : plain.steps) EXPECT_TRUE(std::isnan(st.experts_per_layer)) << "step " << st.step;
  const auto dense_cost = runs::model_run_cost(plain.steps, curve);
  EXPECT_TRUE(std::isnan(dense_cost.mean_experts_per_layer));
  EXPECT_EQ(dense_cost.verdict.find("mixture of experts"), std::string::npos) << dense_cost.verdict;
}

}  // namespace
}  // namespace specscope
