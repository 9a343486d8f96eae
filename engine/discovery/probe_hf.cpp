// probe_model for folders: Hugging Face models, EAGLE-1/2 and EAGLE-3 heads, Medusa heads (recognized by the
// fields and tensor names the loaders in engine/heads read), and peft LoRA adapters. Only config.json and the
// weight files' headers are read.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/discovery/probe_formats.h"
#include "engine/formats/safetensors.h"
#include "engine/heads/head_files.h"
#include "engine/model/config.h"
#include "engine/model/hf_text_names.h"
#include "engine/model/lora_adapter.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"

namespace specscope::discovery {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int int_field(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number_integer() ? j[key].get<int>() : 0;
}

std::string string_field(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

const TensorView* find(const TensorStore& st, const std::string& name) { return st.has(name) ? &st.get(name) : nullptr; }

int64_t dim(const TensorView* t, size_t i) { return t && t->shape.size() > i ? t->shape[i] : 0; }

void count_weights(const TensorStore& st, ModelFacts& f) {
  for (const auto& [name, t] : st.all()) f.parameters += uint64_t(t.numel());
  std::error_code ec;
  for (const auto& file : st.files) f.size_bytes += fs::file_size(file, ec);
}

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

void probe_medusa(const std::string& dir, const json& cfg, ModelFacts& f) {
  f.kind = ModelKind::MedusaHead;
  // The files MedusaHeads::load looks for, in its order.
  const auto st = open_head_weights(dir, {"medusa_lm_head.safetensors", "medusa_lm_head.pt", "model.safetensors"});
  f.format = fs::path(st->files.front()).extension() == ".pt" ? "pytorch" : "safetensors";
  count_weights(*st, f);
  const int layers = cfg.contains("medusa_num_layers") ? int_field(cfg, "medusa_num_layers") : 1;
  f.num_layers = layers;
  while (find(*st, std::to_string(f.medusa_heads) + "." + std::to_string(layers) + ".weight")) ++f.medusa_heads;
  const TensorView* out = find(*st, "0." + std::to_string(layers) + ".weight");
  if (!out || out->shape.size() != 2) {
    f.problem = "no Medusa head tensors ('0." + std::to_string(layers) + ".weight') in " + st->files.front();
    return;
  }
  f.vocab_size = int(dim(out, 0));
  f.hidden_size = f.target_hidden = int(dim(out, 1));
  f.dtype = std::string(dtype_name(out->dtype));
}

void probe_eagle(const json& cfg, const TensorStore& st, ModelFacts& f) {
  bool eagle3 = find(st, "midlayer.self_attn.q_proj.weight") != nullptr;
  if (cfg.contains("architectures") && cfg["architectures"].is_array())
    for (const auto& a : cfg["architectures"])
      if (a.is_string() && a.get<std::string>().find("Eagle3") != std::string::npos) eagle3 = true;
  f.kind = eagle3 ? ModelKind::Eagle3Head : ModelKind::Eagle1Head;
  const TensorView* fc = find(st, "fc.weight");
  f.hidden_size = int(dim(fc, 0));
  f.dtype = std::string(dtype_name(fc->dtype));
  f.num_layers = 1;
  f.vocab_size = int_field(cfg, "vocab_size");  // EAGLE-1 heads without one use the target's
  if (!eagle3) {
    f.target_hidden = f.hidden_size;
    if (dim(fc, 1) != 2 * int64_t(f.hidden_size)) f.problem = "fc.weight is " + fc->shape_str() + ", not [H, 2H]";
    if (const TensorView* e = find(st, "embed_tokens.weight")) f.vocab_size = int(dim(e, 0));
  } else {
    f.target_hidden = int(dim(fc, 1) / 3);
    if (dim(fc, 1) % 3) f.problem = "fc.weight is " + fc->shape_str() + ", not [H, 3 x target hidden]";
    if (const int th = int_field(cfg, "target_hidden_size"); th && th != f.target_hidden)
      f.problem = "target_hidden_size " + std::to_string(th) + " disagrees with fc.weight " + fc->shape_str();
    f.draft_vocab = int(dim(find(st, "lm_head.weight"), 0));
  }
}

void probe_target(const std::string& dir, const std::string& cfg_text, const std::string& cfg_path, const TensorStore& st,
                  ModelFacts& f) {
  HfTextNames names;
  bool gpt_oss = false, mla = false;
  int nope = 0, value = 0;
  try {
    const ModelConfig c = ModelConfig::from_json_text(cfg_text, cfg_path);
    // The sizes as the loader reads them: a vision-language checkpoint's are in its text_config, with defaults.
    f.hidden_size = c.hidden_size;
    f.vocab_size = c.vocab_size;
    f.num_layers = c.num_layers;
    f.kv_dim = c.cache_key_dim();
    f.kv_value_dim = c.cache_value_dim();
    f.max_context = c.max_position_embeddings;
    f.family = family_of(c.model_type);
    names = hf_text_names(c, st);
    gpt_oss = c.architecture == "GptOssForCausalLM";
    mla = c.mla();
    nope = c.nope_dim();
    value = c.value_dim();
  } catch (const InputError& e) {
    f.problem = e.what();
    return;
  }
  f.parameters = names.parameters(st);  // as Model::parameter_count counts: a wrapper's vision tower left out
  // GPT-OSS's experts are copied out of the mapping (model.cpp, GptOssExpertCopies): the fused dense tensors as they
  // are, the MXFP4 codes with their scales as ggml's blocks (17 bytes a block of 32 for the 16 bytes of codes).
  // DeepSeek's kv_b_proj: each head's key part copied transposed (mla_weights.cpp), its nope rows of the whole.
  for (const auto& [name, t] : st.all()) {
    if (mla && name.ends_with("self_attn.kv_b_proj.weight"))
      f.copied_bytes += t.nbytes() / uint64_t(nope + value) * uint64_t(nope);
    if (!gpt_oss || name.find(".mlp.experts.") == std::string::npos || name.ends_with("_bias") || name.ends_with("_scales")) continue;
    f.copied_bytes += name.ends_with("_blocks") ? t.nbytes() / 16 * 17 : t.nbytes();
  }
  const std::string embed_name = names.model + "embed_tokens.weight";
  const TensorView* embed = find(st, embed_name);
  if (!embed) {
    f.problem = st.files.front() + ": no tensor '" + embed_name + "'";
    return;
  }
  f.dtype = std::string(dtype_name(embed->dtype));
  if (!is_float(embed->dtype)) f.problem = st.files.front() + ": weights must be f32, f16 or bf16, not " + f.dtype;
  if (dim(embed, 0) != f.vocab_size || dim(embed, 1) != f.hidden_size)
    f.problem = st.files.front() + ": " + embed_name + " is " + embed->shape_str() + ", config.json implies [" +
                std::to_string(f.vocab_size) + ", " + std::to_string(f.hidden_size) + "]";
  const fs::path tok = fs::path(dir) / "tokenizer.json";
  std::error_code ec;
  if (!fs::exists(tok, ec)) {
    if (f.problem.empty()) f.problem = tok.string() + ": missing (SpecScope reads Hugging Face tokenizer.json files)";
  } else {
    f.tokenizer_file = tok.string();
  }
}

ModelFacts probe_adapter(const std::string& dir) {
  ModelFacts f;
  try {
    const LoraAdapter a = LoraAdapter::open(dir);
    f = probe_model(a.base_path);
    if (!f.problem.empty()) f.problem = "its base " + a.base_path + ": " + f.problem;
  } catch (const InputError& e) {
    f.problem = e.what();
  }
  f.path = dir;
  f.kind = ModelKind::LoraAdapter;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") f.size_bytes += fs::file_size(e.path(), ec);
  return f;
}

}  // namespace

ModelFacts probe_hf_folder(const std::string& dir) {
  const fs::path d(dir);
  const fs::path cfg_path = d / "config.json";
  std::error_code ec;
  if (!fs::exists(cfg_path, ec)) {
    if (LoraAdapter::is_adapter_dir(dir)) return probe_adapter(dir);
    if (fs::is_symlink(fs::symlink_status(cfg_path, ec)))
      throw InputError(cfg_path.string(), "a dangling link (its blob is missing: an interrupted download?)");
    throw InputError(dir, "no config.json (not a Hugging Face model folder)");
  }
  const std::string text = read_text_file(cfg_path.string());
  json cfg;
  try {
    cfg = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(cfg_path.string(), std::string("invalid JSON: ") + e.what());
  }
  if (!cfg.is_object()) throw InputError(cfg_path.string(), "expected a JSON object");
  ModelFacts f;
  f.path = dir;
  f.format = "safetensors";
  if (cfg.contains("architectures") && cfg["architectures"].is_array() && !cfg["architectures"].empty() &&
      cfg["architectures"][0].is_string())
    f.architecture = cfg["architectures"][0].get<std::string>();
  f.family = family_of(string_field(cfg, "model_type"));
  f.hidden_size = int_field(cfg, "hidden_size");
  f.vocab_size = int_field(cfg, "vocab_size");
  f.num_layers = int_field(cfg, "num_hidden_layers");
  f.max_context = int_field(cfg, "max_position_embeddings");
  f.base_model = string_field(cfg, "base_model_name_or_path");
  if (f.base_model.empty()) f.base_model = string_field(cfg, "base_model");

  if (cfg.contains("medusa_num_heads")) {
    probe_medusa(dir, cfg, f);
    return f;
  }
  std::shared_ptr<TensorStore> st;
  if (fs::exists(d / "model.safetensors", ec) || fs::exists(d / "model.safetensors.index.json", ec)) {
    st = std::make_shared<TensorStore>(TensorStore::open_dir(dir));  // headers only; InputError when truncated
  } else if (fs::exists(d / "pytorch_model.bin", ec)) {
    st = open_head_weights(dir, {"pytorch_model.bin"});
    f.format = "pytorch";
  } else {
    throw InputError(dir, "no weights (model.safetensors, model.safetensors.index.json or pytorch_model.bin)");
  }
  count_weights(*st, f);
  if (st->has("fc.weight")) {
    probe_eagle(cfg, *st, f);
    return f;
  }
  if (f.format == "pytorch") {
    f.problem = dir + ": only safetensors weights are supported for models (convert with save_pretrained)";
    return f;
  }
  probe_target(dir, text, cfg_path.string(), *st, f);
  return f;
}

}  // namespace specscope::discovery
