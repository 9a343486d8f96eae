// LoRA adapters as peft saves them (engine/model/lora_adapter.h), against peft itself: the fixtures in
// tests/fixtures/lora (make_lora_fixture.py) hold adapters with random A and B on the tiny fixture models and
// the logits and greedy continuation of peft's PeftModel loaded from those files.
//  - merged logits match PeftModel's to 1e-4 of the largest logit (and differ clearly from the base's, so a
//    merge that did nothing would fail), for rank/alpha patterns and rsLoRA;
//  - 24-token greedy continuations equal PeftModel.generate's;
//  - the loaded model names the adapter (path, identity) and keeps the base's tokenizer;
//  - broken adapters are InputErrors naming the file and the problem, and the CLI exits 2 on them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/formats/safetensors.h"
#include "engine/model/lora_adapter.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"
#include "tests/test_support.h"

using namespace specscope;
namespace fs = std::filesystem;

namespace {

struct Expected {
  std::vector<int32_t> prompt, greedy;
  std::string base;
  std::vector<float> logits;  // [T, V]
  int vocab = 0;
};

Expected expected(const std::string& name) {
  Expected e;
  const auto j = nlohmann::json::parse(read_text_file(test::fixture("lora/" + name + "/expected.json")));
  e.prompt = j.at("prompt").get<std::vector<int32_t>>();
  e.greedy = j.at("greedy").get<std::vector<int32_t>>();
  e.base = j.at("base").get<std::string>();
  auto st = TensorStore::open_file(test::fixture("lora/" + name + "/expected.safetensors"));
  const TensorView& t = st.get("logits");
  e.logits = t.to_f32();
  e.vocab = int(t.shape[1]);
  return e;
}

std::vector<float> prompt_logits(const Model& m, const std::vector<int32_t>& prompt) {
  auto ctx = m.new_cpu_context(128);
  ForwardOutput out;
  ctx->forward(Batch::causal(prompt), out);
  return out.logits;
}

class LoraParity : public ::testing::TestWithParam<std::string> {};

TEST_P(LoraParity, LogitsMatchPeft) {
  const Expected e = expected(GetParam());
  auto m = Model::load(test::fixture("lora/" + GetParam()));
  auto base = Model::load(test::fixture("models/" + e.base));
  const auto got = prompt_logits(*m, e.prompt), plain = prompt_logits(*base, e.prompt);
  ASSERT_EQ(got.size(), e.logits.size());
  double max_ref = 0, worst = 0, moved = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_ref = std::max(max_ref, double(std::fabs(e.logits[i])));
    worst = std::max(worst, double(std::fabs(got[i] - e.logits[i])));
    moved = std::max(moved, double(std::fabs(plain[i] - e.logits[i])));
  }
  EXPECT_LE(worst, 1e-4 * std::max(1.0, max_ref)) << "largest |logit| " << max_ref;
  EXPECT_GT(moved, 1e-2) << "the adapter should change the base's logits";
  std::printf("[ lora     ] %s: worst |diff| %.3g (largest logit %.3g; the base is %.3g away)\n", GetParam().c_str(),
              worst, max_ref, moved);
}

TEST_P(LoraParity, GreedyMatchesPeftGenerate) {
  const Expected e = expected(GetParam());
  auto m = Model::load(test::fixture("lora/" + GetParam()));
  auto ctx = m->new_cpu_context(128);
  Batch b = Batch::causal(e.prompt);
  b.logit_rows = {int(e.prompt.size()) - 1};
  ForwardOutput out;
  ctx->forward(b, out);
  std::vector<int32_t> got;
  for (size_t i = 0; i < e.greedy.size(); ++i) {
    const float* row = out.row_logits(0);
    const int32_t next = int32_t(std::max_element(row, row + out.vocab) - row);
    got.push_back(next);
    ctx->forward(Batch::causal(std::vector<int32_t>{next}), out);
  }
  EXPECT_EQ(got, e.greedy);
}

TEST_P(LoraParity, NamesTheAdapterAndKeepsTheBaseTokenizer) {
  const Expected e = expected(GetParam());
  auto m = Model::load(test::fixture("lora/" + GetParam()));
  auto base = Model::load(test::fixture("models/" + e.base));
  EXPECT_EQ(m->path(), test::fixture("lora/" + GetParam()));
  EXPECT_NE(m->identity().config_sha256, base->identity().config_sha256);
  EXPECT_NE(m->identity().weights_index_sha256, base->identity().weights_index_sha256);
  EXPECT_EQ(m->config().num_layers, base->config().num_layers);
  EXPECT_EQ(m->tokenizer().encode("hello world", true), base->tokenizer().encode("hello world", true));
  EXPECT_EQ(m->weights_dtype(), base->weights_dtype());
}

INSTANTIATE_TEST_SUITE_P(Adapters, LoraParity, ::testing::Values("qwen2_lora", "llama_rslora", "phi3_lora"));

// ---- broken adapters ----

class BrokenAdapter : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = test::scratch_dir("lora");
    fs::copy(test::fixture("lora/qwen2_lora/adapter_model.safetensors"), dir / "adapter_model.safetensors");
    config = nlohmann::json::parse(read_text_file(test::fixture("lora/qwen2_lora/adapter_config.json")));
    config["base_model_name_or_path"] = test::fixture("models/qwen2_f32");
    write_config();
  }
  void TearDown() override { fs::remove_all(dir); }
  void write_config() { std::ofstream(dir / "adapter_config.json") << config.dump(); }
  // Rewrites adapter_model.safetensors with f32 tensors of the given shapes (values 0.01).
  void write_tensors(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
    nlohmann::json h = nlohmann::json::object();
    size_t off = 0;
    for (const auto& [name, shape] : tensors) {
      size_t n = 1;
      for (auto d : shape) n *= size_t(d);
      h[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {off, off + 4 * n}}};
      off += 4 * n;
    }
    const std::string hs = h.dump();
    std::ofstream f(dir / "adapter_model.safetensors", std::ios::binary);
    const uint64_t len = hs.size();
    f.write(reinterpret_cast<const char*>(&len), 8);
    f << hs;
    const float v = 0.01f;
    for (size_t i = 0; i < off / 4; ++i) f.write(reinterpret_cast<const char*>(&v), 4);
  }
  // Loading fails with an InputError whose message contains `what` (and names a file of the adapter).
  void expect_error(const std::string& what) {
    try {
      Model::load(dir.string());
      ADD_FAILURE() << "expected an InputError containing '" << what << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(dir.string()), std::string::npos) << e.what();
    }
  }
  fs::path dir;
  nlohmann::json config;
};

TEST_F(BrokenAdapter, LoadsWhenIntact) { EXPECT_NO_THROW(Model::load(dir.string())); }

TEST_F(BrokenAdapter, MissingBase) {
  config["base_model_name_or_path"] = "someone/some-model-on-the-hub";
  write_config();
  expect_error("not found");
}

TEST_F(BrokenAdapter, NotLora) {
  config["peft_type"] = "PREFIX_TUNING";
  write_config();
  expect_error("only LORA");
}

TEST_F(BrokenAdapter, DoraRefused) {
  config["use_dora"] = true;
  write_config();
  expect_error("DoRA");
}

TEST_F(BrokenAdapter, ModulesToSaveRefused) {
  config["modules_to_save"] = {"lm_head"};
  write_config();
  expect_error("modules_to_save");
}

TEST_F(BrokenAdapter, RankDisagreesWithConfig) {
  config["r"] = 5;
  write_config();
  expect_error("r = 5");
}

TEST_F(BrokenAdapter, InvalidJson) {
  std::ofstream(dir / "adapter_config.json") << "{\"peft_type\": \"LORA\",";
  expect_error("invalid JSON");
}

TEST_F(BrokenAdapter, MissingWeights) {
  fs::remove(dir / "adapter_model.safetensors");
  expect_error("no adapter weights");
}

TEST_F(BrokenAdapter, UnknownTensor) {
  write_tensors({{"base_model.model.model.embed_tokens.lora_embedding_A", {4, 64}}});
  expect_error("not a LoRA A/B matrix");
}

TEST_F(BrokenAdapter, AbsurdlyLongNamesAreRefusedBeforeAnyRegex) {
  write_tensors({{"base_model.model." + std::string(200000, 'x') + ".lora_A.weight", {4, 64}}});
  expect_error("longer than 256 characters");
  SetUp();
  config["rank_pattern"] = {{std::string(100000, '('), 2}};
  write_config();
  expect_error("longer than 256 characters");
}

TEST_F(BrokenAdapter, RegularExpressionPatternsAreRefused) {
  config["rank_pattern"] = {{"(a|a)*down_proj", 2}};
  write_config();
  expect_error("is a regular expression");
}

TEST_F(BrokenAdapter, WrongTypesAreFileErrors) {
  config["peft_type"] = 1;  // found by fuzz_lora_adapter: escaped as a JSON library exception
  write_config();
  expect_error("\"peft_type\" has the wrong type");
  SetUp();
  config["use_rslora"] = "yes";
  write_config();
  expect_error("\"use_rslora\" has the wrong type");
}

TEST_F(BrokenAdapter, AWithoutB) {
  write_tensors({{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", {4, 64}}});
  expect_error("but not lora_B");
}

TEST_F(BrokenAdapter, LayerOutOfRange) {
  write_tensors({{"base_model.model.model.layers.9.self_attn.q_proj.lora_A.weight", {4, 64}},
                 {"base_model.model.model.layers.9.self_attn.q_proj.lora_B.weight", {64, 4}}});
  expect_error("not a projection of a decoder layer");
}

// peft names a vision-language base's modules by their path in it (model.language_model.layers.N... under
// transformers >= 4.52, language_model.model.layers.N... before): the same update then merges into the same text
// model as on the text checkpoint, and updates of the vision tower (which text never runs) are left out.
TEST_F(BrokenAdapter, AVisionLanguageBaseTakesPeftsNamesOfItsTextModel) {
  const std::string q = ".layers.0.self_attn.q_proj.lora_";
  config["base_model_name_or_path"] = test::fixture("models/gemma3_f32");
  write_config();
  write_tensors({{"base_model.model.model" + q + "A.weight", {4, 64}}, {"base_model.model.model" + q + "B.weight", {64, 4}}});
  const auto on_text = Model::load(dir.string());
  const auto ids = on_text->tokenizer().encode("The cat sat down.", true);
  const auto logits = [&](const Model& m) {
    ForwardOutput out;
    m.new_cpu_context(64)->forward(Batch::causal(ids), out);
    return out.logits;
  };
  const auto want = logits(*on_text);
  ASSERT_NE(want, logits(*Model::load(test::fixture("models/gemma3_f32"))));  // the update changes the logits
  const std::string vision = "base_model.model.model.vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.lora_";
  for (const auto& [base, prefix] : {std::pair{"models/gemma3_vlm_statedict_f32", "base_model.model.model.language_model"},
                                     std::pair{"models/gemma3_vlm_f32", "base_model.model.language_model.model"}}) {
    SCOPED_TRACE(base);
    config["base_model_name_or_path"] = test::fixture(base);
    write_config();
    write_tensors({{prefix + q + "A.weight", {4, 64}},
                   {prefix + q + "B.weight", {64, 4}},
                   {vision + "A.weight", {4, 16}},
                   {vision + "B.weight", {16, 4}}});
    EXPECT_EQ(logits(*Model::load(dir.string())), want);
  }
  // The text checkpoint has no such prefix: an adapter naming one is refused there, not silently dropped.
  config["base_model_name_or_path"] = test::fixture("models/gemma3_f32");
  write_config();
  write_tensors({{"base_model.model.model.language_model" + q + "A.weight", {4, 64}},
                 {"base_model.model.model.language_model" + q + "B.weight", {64, 4}}});
  expect_error("not a projection of a decoder layer");
}

TEST_F(BrokenAdapter, ShapeDoesNotFitBase) {
  write_tensors({{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", {4, 65}},
                 {"base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", {64, 4}}});
  expect_error("do not fit the base weight");
}

TEST_F(BrokenAdapter, CliExitsTwoNamingTheFile) {
  config["use_dora"] = true;
  write_config();
  const auto r = test::run_cli("info --model " + dir.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("adapter_config.json"), std::string::npos) << r.out;
  config["use_dora"] = false;
  write_config();
  const auto ok = test::run_cli("info --model " + dir.string());
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
}

}  // namespace
