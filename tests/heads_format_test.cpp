// Format-level facts about the draft-head fixtures in tests/fixtures/heads (written by
// tests/fixtures/make_head_fixtures.py in the official EAGLE-1, EAGLE-3 and Medusa-1 layouts), read through
// TensorStore (safetensors) and load_torch_checkpoint (torch.save files): every expected tensor is present with
// the right shape and dtype, nothing unexpected is there, EAGLE-3's d2t/t2d agree, and the .bin/.pt and
// .safetensors copies hold identical bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/formats/safetensors.h"
#include "engine/formats/torch_checkpoint.h"
#include "engine/util/mapped_file.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;
using Tensors = std::map<std::string, TensorView>;

json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return in ? json::parse(in) : json::object();
}

struct Dims {
  int64_t H, I, KV, V;
};

Dims target_dims() {
  json c = read_json(test::fixture("models/llama_bytelevel_f32/config.json"));
  int64_t H = c.at("hidden_size"), heads = c.at("num_attention_heads"), kv_heads = c.at("num_key_value_heads");
  return {H, c.at("intermediate_size"), kv_heads * (H / heads), c.at("vocab_size")};
}

Tensors from_safetensors(const std::string& rel) {
  TensorStore s = TensorStore::open_file(test::fixture(rel));
  return s.all();
}

Tensors from_torch(const std::string& rel) { return load_torch_checkpoint(MappedFile::open(test::fixture(rel))); }

using Spec = std::map<std::string, std::pair<DType, std::vector<int64_t>>>;

void expect_exactly(const Tensors& t, const Spec& spec, const std::string& what) {
  for (const auto& [name, want] : spec) {
    auto it = t.find(name);
    if (it == t.end()) {
      ADD_FAILURE() << what << ": missing " << name;
      continue;
    }
    EXPECT_EQ(it->second.dtype, want.first) << what << ": " << name;
    EXPECT_EQ(it->second.shape, want.second) << what << ": " << name;
  }
  for (const auto& [name, _] : t) EXPECT_TRUE(spec.count(name)) << what << ": unexpected tensor " << name;
}

void expect_same_bytes(const Tensors& a, const Tensors& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (const auto& [name, ta] : a) {
    ASSERT_TRUE(b.count(name)) << what << ": " << name;
    const TensorView& tb = b.at(name);
    ASSERT_EQ(ta.dtype, tb.dtype) << name;
    ASSERT_EQ(ta.shape, tb.shape) << name;
    EXPECT_EQ(std::memcmp(ta.data, tb.data, ta.nbytes()), 0) << what << ": values of " << name << " differ";
  }
}

Spec eagle1_spec(const Dims& d) {
  const std::string p = "layers.0.";
  return {{"fc.weight", {DType::F32, {d.H, 2 * d.H}}},
          {"fc.bias", {DType::F32, {d.H}}},
          {p + "self_attn.q_proj.weight", {DType::F32, {d.H, d.H}}},
          {p + "self_attn.k_proj.weight", {DType::F32, {d.KV, d.H}}},
          {p + "self_attn.v_proj.weight", {DType::F32, {d.KV, d.H}}},
          {p + "self_attn.o_proj.weight", {DType::F32, {d.H, d.H}}},
          {p + "mlp.gate_proj.weight", {DType::F32, {d.I, d.H}}},
          {p + "mlp.up_proj.weight", {DType::F32, {d.I, d.H}}},
          {p + "mlp.down_proj.weight", {DType::F32, {d.H, d.I}}},
          {p + "post_attention_layernorm.weight", {DType::F32, {d.H}}}};
}

TEST(HeadsFormat, Eagle1BinAndSafetensorsAgree) {
  const Dims d = target_dims();
  Tensors bin = from_torch("heads/eagle1_bin/pytorch_model.bin");
  Tensors st = from_safetensors("heads/eagle1_st/model.safetensors");
  expect_exactly(bin, eagle1_spec(d), "eagle1_bin");
  expect_exactly(st, eagle1_spec(d), "eagle1_st");
  EXPECT_EQ(bin.count("layers.0.input_layernorm.weight"), 0u);  // EAGLE-1's layer 0 has none
  expect_same_bytes(bin, st, "eagle1 bin vs safetensors");
}

TEST(HeadsFormat, Eagle1Fitted) {
  expect_exactly(from_safetensors("heads/eagle1_fitted/model.safetensors"), eagle1_spec(target_dims()),
                 "eagle1_fitted");
}

TEST(HeadsFormat, Eagle1Config) {
  const Dims d = target_dims();
  for (const char* dir : {"eagle1_bin", "eagle1_st", "eagle1_fitted"}) {
    json c = read_json(test::fixture(std::string("heads/") + dir + "/config.json"));
    EXPECT_EQ(c.at("num_hidden_layers"), 1) << dir;
    EXPECT_EQ(c.at("bias"), true) << dir;
    EXPECT_EQ(c.at("hidden_size"), d.H) << dir;
    EXPECT_EQ(c.at("vocab_size"), d.V) << dir;
    EXPECT_EQ(c.at("architectures")[0], "LlamaForCausalLM") << dir;
  }
}

TEST(HeadsFormat, Eagle3) {
  const Dims d = target_dims();
  json c = read_json(test::fixture("heads/eagle3/config.json"));
  const int64_t dv = c.at("draft_vocab_size");
  EXPECT_EQ(c.at("architectures")[0], "LlamaForCausalLMEagle3");
  EXPECT_EQ(c.at("vocab_size"), d.V);
  EXPECT_LT(dv, d.V);
  const std::string p = "midlayer.";
  Spec spec = {{"fc.weight", {DType::F32, {d.H, 3 * d.H}}},
               {p + "self_attn.q_proj.weight", {DType::F32, {d.H, 2 * d.H}}},
               {p + "self_attn.k_proj.weight", {DType::F32, {d.KV, 2 * d.H}}},
               {p + "self_attn.v_proj.weight", {DType::F32, {d.KV, 2 * d.H}}},
               {p + "self_attn.o_proj.weight", {DType::F32, {d.H, d.H}}},
               {p + "input_layernorm.weight", {DType::F32, {d.H}}},
               {p + "hidden_norm.weight", {DType::F32, {d.H}}},
               {p + "post_attention_layernorm.weight", {DType::F32, {d.H}}},
               {p + "mlp.gate_proj.weight", {DType::F32, {d.I, d.H}}},
               {p + "mlp.up_proj.weight", {DType::F32, {d.I, d.H}}},
               {p + "mlp.down_proj.weight", {DType::F32, {d.H, d.I}}},
               {"norm.weight", {DType::F32, {d.H}}},
               {"lm_head.weight", {DType::F32, {dv, d.H}}},
               {"d2t", {DType::I64, {dv}}},
               {"t2d", {DType::BOOL, {d.V}}}};
  Tensors t = from_torch("heads/eagle3/pytorch_model.bin");
  expect_exactly(t, spec, "eagle3");
  ASSERT_TRUE(t.count("d2t") && t.count("t2d"));
  const auto* d2t = static_cast<const int64_t*>(t.at("d2t").data);
  const auto* t2d = static_cast<const uint8_t*>(t.at("t2d").data);
  int64_t prev = -1, in_draft = 0;
  for (int64_t v = 0; v < d.V; ++v) in_draft += t2d[v] != 0;
  EXPECT_EQ(in_draft, dv);
  for (int64_t i = 0; i < dv; ++i) {
    const int64_t target_id = i + d2t[i];
    ASSERT_GE(target_id, 0) << i;
    ASSERT_LT(target_id, d.V) << i;
    EXPECT_TRUE(t2d[target_id]) << "t2d[d2t[" << i << "] + " << i << "] is false";
    EXPECT_GT(target_id, prev) << "draft ids map to increasing target ids";
    prev = target_id;
  }
}

Spec medusa_spec(const Dims& d, int heads) {
  Spec s;
  for (int i = 0; i < heads; ++i) {
    const std::string p = std::to_string(i) + ".";
    s[p + "0.linear.weight"] = {DType::F16, {d.H, d.H}};
    s[p + "0.linear.bias"] = {DType::F16, {d.H}};
    s[p + "1.weight"] = {DType::F16, {d.V, d.H}};
  }
  return s;
}

TEST(HeadsFormat, MedusaSafetensorsAndPtAgree) {
  const Dims d = target_dims();
  for (const char* dir : {"medusa_st", "medusa_pt", "medusa_fitted"}) {
    json c = read_json(test::fixture(std::string("heads/") + dir + "/config.json"));
    EXPECT_EQ(c.at("medusa_num_heads"), 5) << dir;
    EXPECT_EQ(c.at("medusa_num_layers"), 1) << dir;
    EXPECT_TRUE(c.at("base_model_name_or_path").is_string()) << dir;
  }
  Tensors st = from_safetensors("heads/medusa_st/medusa_lm_head.safetensors");
  Tensors pt = from_torch("heads/medusa_pt/medusa_lm_head.pt");
  expect_exactly(st, medusa_spec(d, 5), "medusa_st");
  expect_exactly(pt, medusa_spec(d, 5), "medusa_pt");
  expect_same_bytes(st, pt, "medusa safetensors vs pt");
  expect_exactly(from_safetensors("heads/medusa_fitted/medusa_lm_head.safetensors"), medusa_spec(d, 5),
                 "medusa_fitted");
}

// The expected.json files describe the weights next to them (prompt, tree sizes): a cheap consistency check that
// the fixtures were regenerated together.
TEST(HeadsFormat, ExpectedJsonShapes) {
  for (const char* dir : {"eagle1_bin", "eagle1_st", "eagle1_fitted", "eagle3"}) {
    json e = read_json(test::fixture(std::string("heads/") + dir + "/expected.json"));
    ASSERT_TRUE(e.contains("trees")) << dir;
    const size_t L = e.at("prompt_ids").size();
    EXPECT_EQ(e.at("feature").at("values").size(), L) << dir;
    EXPECT_EQ(e.at("head_hidden").size(), L) << dir;
    for (const auto& [name, t] : e.at("trees").items()) {
      const size_t n = t.at("total_tokens");
      EXPECT_EQ(t.at("draft_tokens").size(), n) << dir << " " << name;
      EXPECT_EQ(t.at("parents").size(), n) << dir << " " << name;
      EXPECT_EQ(t.at("tree_mask").size(), n) << dir << " " << name;
      EXPECT_EQ(t.at("draft_tokens")[0], e.at("target_next_token")) << dir << " " << name;
    }
  }
  json a = read_json(test::fixture("heads/eagle1_bin/expected.json"));
  json b = read_json(test::fixture("heads/eagle1_st/expected.json"));
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace specscope
