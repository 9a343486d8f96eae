// Gemma 3 4B-27B as users download them: vision-language checkpoints (Gemma3ForConditionalGeneration) whose text
// model SpecScope runs. Fixtures from tests/fixtures/make_gemma3_vlm_fixtures.py, which checked with transformers
// that each computes the text model of models/gemma3_f32 (model_parity_test holds both to transformers' goldens
// too). Here: the published 4B config read as transformers reads it, both key layouts giving the text model's
// logits bit for bit, discovery describing the text model, and clear errors for broken wrappers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/discovery/model_probe.h"
#include "engine/model/config.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"
#include "tests/test_support.h"

using namespace specscope;
namespace fs = std::filesystem;

namespace {

const char* const kLayouts[] = {"models/gemma3_vlm_f32", "models/gemma3_vlm_statedict_f32"};

std::vector<float> logits_of(const Model& m, const std::vector<int32_t>& ids) {
  auto ctx = m.new_cpu_context(64);
  ForwardOutput out;
  ctx->forward(Batch::causal(ids), out);
  return out.logits;
}

// Google's config.json for Gemma 3 4B-it names six keys of its text model, and 1B-it's leaves out
// tie_word_embeddings; the rest are Gemma3TextConfig's defaults, which Llama's would get wrong (heads, head_dim,
// vocabulary, RoPE theta, the tied head: an untied one would look for an lm_head.weight the files do not have).
class PublishedGemma3Config : public ::testing::TestWithParam<std::string> {};

TEST_P(PublishedGemma3Config, ReadsAsTransformersReadsIt) {
  const ModelConfig c = ModelConfig::from_file(test::fixture("configs/" + GetParam() + ".json"));
  const auto want = nlohmann::json::parse(read_text_file(test::fixture("configs/" + GetParam() + ".expected.json")));
  EXPECT_EQ(c.wrapper_architecture, GetParam() == "gemma3_4b_it" ? "Gemma3ForConditionalGeneration" : "");
  EXPECT_EQ(c.architecture, "Gemma3ForCausalLM");
  EXPECT_EQ(c.hidden_size, want["hidden_size"].get<int>());
  EXPECT_EQ(c.intermediate_size, want["intermediate_size"].get<int>());
  EXPECT_EQ(c.num_layers, want["num_hidden_layers"].get<int>());
  EXPECT_EQ(c.num_heads, want["num_attention_heads"].get<int>());
  EXPECT_EQ(c.num_kv_heads, want["num_key_value_heads"].get<int>());
  EXPECT_EQ(c.head_dim, want["head_dim"].get<int>());
  EXPECT_EQ(c.vocab_size, want["vocab_size"].get<int>());
  EXPECT_EQ(c.max_position_embeddings, want["max_position_embeddings"].get<int>());
  EXPECT_FLOAT_EQ(c.rms_norm_eps, want["rms_norm_eps"].get<float>());
  EXPECT_EQ(c.tie_word_embeddings, want["tie_word_embeddings"].get<bool>());
  EXPECT_FLOAT_EQ(c.attention_scale(), 1.f / std::sqrt(want["query_pre_attn_scalar"].get<float>()));
  ASSERT_TRUE(c.sliding_window.has_value());
  EXPECT_EQ(*c.sliding_window, want["sliding_window"].get<int>());
  const auto sliding = want["layer_sliding"].get<std::vector<bool>>();
  ASSERT_EQ(c.layer_sliding.size(), sliding.size());
  for (size_t l = 0; l < sliding.size(); ++l) EXPECT_EQ(bool(c.layer_sliding[l]), sliding[l]) << "layer " << l;
  EXPECT_FLOAT_EQ(c.rope_theta, want["rope_theta"].get<float>());
  const std::string rope_type = want["rope_type"].get<std::string>();
  EXPECT_EQ(c.rope_scaling.type, rope_type == "default" ? "none" : rope_type);
  EXPECT_FLOAT_EQ(c.rope_scaling.factor, want["rope_factor"].get<float>());
  EXPECT_FLOAT_EQ(c.rope_local_theta, want["rope_local_theta"].get<float>());
  EXPECT_EQ(c.eos_token_ids, want["eos_token_id"].get<std::vector<int>>());
  EXPECT_EQ(c.torch_dtype, DType::BF16);
  EXPECT_EQ(c.summary().find("Gemma3ForConditionalGeneration") != std::string::npos, !c.wrapper_architecture.empty())
      << c.summary();
}

INSTANTIATE_TEST_SUITE_P(Gemma3Vlm, PublishedGemma3Config, ::testing::Values("gemma3_4b_it", "gemma3_1b_it"));

// Both layouts (what transformers writes, Google's files included, and transformers' in-memory names) hold the
// same text model: the same weights, so the same logits to the bit; the vision tower is neither read nor counted.
TEST(Gemma3Vlm, BothKeyLayoutsComputeTheTextModel) {
  const auto text = Model::load(test::fixture("models/gemma3_f32"));
  const std::vector<int32_t> ids = text->tokenizer().encode("The cat sat down on the mat.", true);
  const auto want = logits_of(*text, ids);
  for (const char* layout : kLayouts) {
    SCOPED_TRACE(layout);
    const auto m = Model::load(test::fixture(layout));
    EXPECT_EQ(m->config().wrapper_architecture, "Gemma3ForConditionalGeneration");
    EXPECT_EQ(m->parameter_count(), text->parameter_count());
    EXPECT_EQ(logits_of(*m, ids), want);
    EXPECT_EQ(m->tokenizer().encode("The cat sat down on the mat.", true), ids);
  }
}

TEST(Gemma3Vlm, DiscoveryDescribesTheTextModel) {
  const auto text = Model::load(test::fixture("models/gemma3_f32"));
  for (const char* layout : kLayouts) {
    SCOPED_TRACE(layout);
    const discovery::ModelFacts f = discovery::probe_model(test::fixture(layout));
    EXPECT_TRUE(f.loads()) << f.problem;
    EXPECT_EQ(f.architecture, "Gemma3ForConditionalGeneration");
    EXPECT_EQ(f.family, "gemma3");  // as the 1B text checkpoint's and GGUF's: drafters pair across them
    EXPECT_EQ(f.hidden_size, text->config().hidden_size);
    EXPECT_EQ(f.num_layers, text->config().num_layers);
    EXPECT_EQ(f.vocab_size, text->config().vocab_size);
    EXPECT_EQ(f.parameters, text->parameter_count());
  }
  EXPECT_EQ(discovery::probe_model(test::fixture("models/gemma3_f32")).family, "gemma3");
}

class BrokenGemma3Vlm : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = test::scratch_dir("gemma3_vlm");
    fs::copy(test::fixture("models/gemma3_vlm_f32"), dir, fs::copy_options::recursive);
    config = nlohmann::json::parse(read_text_file((dir / "config.json").string()));
  }
  void TearDown() override { fs::remove_all(dir); }
  void write_config() { std::ofstream(dir / "config.json") << config.dump(); }
  void expect_error(const std::string& what, const std::string& file) {
    try {
      Model::load(dir.string());
      ADD_FAILURE() << "expected an InputError containing '" << what << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find((dir / file).string()), std::string::npos) << e.what();
    }
  }
  fs::path dir;
  nlohmann::json config;
};

TEST_F(BrokenGemma3Vlm, WithoutATextConfig) {
  config.erase("text_config");
  write_config();
  expect_error("without a text_config", "config.json");
  EXPECT_FALSE(discovery::probe_model(dir.string()).loads());
}

// A wrapper config beside a text model's weights (model.embed_tokens.weight): neither layout's embeddings exist.
TEST_F(BrokenGemma3Vlm, WeightsOfAnotherLayout) {
  fs::copy_file(test::fixture("models/gemma3_f32/model.safetensors"), dir / "model.safetensors",
                fs::copy_options::overwrite_existing);
  expect_error("'language_model.model.embed_tokens.weight'", "model.safetensors");
  const discovery::ModelFacts f = discovery::probe_model(dir.string());
  EXPECT_NE(f.problem.find("without its text model's embeddings"), std::string::npos) << f.problem;
}

TEST_F(BrokenGemma3Vlm, CliExitsTwoNamingTheFile) {
  config.erase("text_config");
  write_config();
  const auto r = test::run_cli("run --model " + dir.string() + " --prompt hi --max-tokens 2 --no-record");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find((dir / "config.json").string()), std::string::npos) << r.out;
}

}  // namespace

// Found by fuzz_hf_config: Google's gemma-3-1b-it config with "sliding_window": -12 loaded, and the negative window
// reached the attention's visibility test; a query_pre_attn_scalar of 0 or below made the attention scale inf or NaN.
// Both are refused naming the field.
TEST(Gemma3Config, NonPositiveWindowOrQueryScalarIsRefused) {
  const nlohmann::json base =
      nlohmann::json::parse(read_text_file(test::fixture("../../fuzz/corpus/hf_config/gemma3_1b_it.json")));
  EXPECT_NO_THROW(ModelConfig::from_json_text(base.dump(), "config.json"));
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"sliding_window", -12}, {"sliding_window", 0}, {"query_pre_attn_scalar", 0.0},
           {"query_pre_attn_scalar", -4.0}}) {
    nlohmann::json j = base;
    j[key] = value;
    try {
      ModelConfig::from_json_text(j.dump(), "config.json");
      ADD_FAILURE() << key << " = " << value << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(e.problem().find("'" + key + "'"), std::string::npos) << e.what();
    }
  }
}
