#include "engine/model/lora_adapter.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>

#include "engine/formats/safetensors.h"
#include "engine/formats/torch_checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/weights.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"
#include "engine/util/widen.h"

namespace specscope {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr size_t kMaxName = 256;  // longest module name or pattern accepted (real ones are < 100 characters)

// Keys whose non-default values change what the adapter computes in ways the merge below does not model.
void reject_unsupported(const json& j, const std::string& where) {
  auto truthy = [&](const char* key) {
    if (!j.contains(key)) return false;
    const json& v = j[key];
    if (v.is_null()) return false;
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_array() || v.is_object()) return !v.empty();
    if (v.is_string()) return !v.get<std::string>().empty();
    return true;
  };
  if (truthy("use_dora")) throw InputError(where, "DoRA adapters (use_dora) are not supported, only plain LoRA");
  if (truthy("fan_in_fan_out")) throw InputError(where, "fan_in_fan_out adapters (GPT-2 Conv1D layers) are not supported");
  if (truthy("lora_bias")) throw InputError(where, "adapters with LoRA biases (lora_bias) are not supported");
  if (j.contains("bias") && j["bias"].is_string() && j["bias"].get<std::string>() != "none")
    throw InputError(where, "bias \"" + j["bias"].get<std::string>() + "\" is not supported (only \"none\")");
  for (const char* key : {"modules_to_save", "trainable_token_indices", "target_parameters", "layer_replication"})
    if (truthy(key)) throw InputError(where, std::string(key) + " is not supported");
}

// peft's pattern lookup (rank_pattern / alpha_pattern): a key matches a module whose dotted name ends with it
// ("down_proj", "layers.3.mlp.down_proj"); the first match in the object's order wins, as in peft. peft treats keys
// as Python regular expressions; SpecScope accepts the plain names real adapters use and refuses the others with
// an error, rather than run an untrusted file's regular expression (one can take exponential time).
const json* pattern_for(const json& patterns, const std::string& module, const std::string& where) {
  if (!patterns.is_object()) return nullptr;
  for (auto it = patterns.begin(); it != patterns.end(); ++it) {
    const std::string& key = it.key();
    if (key.size() > kMaxName) throw InputError(where, "a rank/alpha pattern is longer than 256 characters");
    if (key.empty() || key.find_first_of("*+?()[]{}|^$\\") != std::string::npos)
      throw InputError(where, "rank/alpha pattern '" + key + "' is a regular expression; only module names are supported");
    if (module == key || (module.size() > key.size() && module.compare(module.size() - key.size(), key.size(), key) == 0 &&
                          module[module.size() - key.size() - 1] == '.'))
      return &it.value();
  }
  return nullptr;
}

double number(const json& v, const std::string& what, const std::string& where) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
    throw InputError(where, what + " must be a positive number");
  return v.get<double>();
}

std::shared_ptr<TensorStore> open_weights(const fs::path& dir) {
  auto store = std::make_shared<TensorStore>();
  const fs::path st = dir / "adapter_model.safetensors", bin = dir / "adapter_model.bin";
  if (fs::exists(st)) {
    store->add_file(MappedFile::open(st.string()));
  } else if (fs::exists(bin)) {
    auto file = MappedFile::open(bin.string());
    store->add_tensors(file, load_torch_checkpoint(file));
  } else {
    throw InputError(dir.string(), "no adapter weights (looked for adapter_model.safetensors, adapter_model.bin)");
  }
  return store;
}

// The base matrices a module's update adds to, in the order of its rows: one, or for Phi-3's fused modules (qkv_proj,
// gate_up_proj, which the loader binds as row views) the parts. `wrapped`: the base is the text model of a
// vision-language checkpoint (hf_text_names.h), whose modules peft names under that checkpoint's prefix.
std::vector<TensorView*> target_matrices(ModelWeights& w, const ModelConfig& c, const std::string& module, bool wrapped) {
  static const std::regex re(
      R"((model\.|model\.language_model\.|language_model\.model\.)layers\.(\d+)\.(self_attn|mlp)\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj|qkv_proj|gate_up_proj))");
  std::smatch m;
  if (!std::regex_match(module, m, re)) return {};
  if ((m[1].str() == "model.") == wrapped) return {};
  const std::string digits = m[2].str();
  if (digits.size() > 6) return {};
  const int layer = std::stoi(digits);
  if (layer < 0 || layer >= int(w.layers.size())) return {};
  LayerWeights& L = w.layers[size_t(layer)];
  const std::string p = m[4].str();
  const bool attn = m[3].str() == "self_attn";
  if (!attn && !L.experts.empty()) return {};  // a mixture-of-experts layer has no one MLP to adapt
  // A fused checkpoint's modules are its fused names only (peft adapts what the base has).
  const bool fused = c.fused_projections;
  if (attn && p == "qkv_proj" && fused) return {&L.wq, &L.wk, &L.wv};
  if (!attn && p == "gate_up_proj" && fused) return {&L.w_gate, &L.w_up};
  if (attn && p == "o_proj") return {&L.wo};
  if (!attn && p == "down_proj") return {&L.w_down};
  if (fused) return {};
  if (attn && p == "q_proj") return {&L.wq};
  if (attn && p == "k_proj") return {&L.wk};
  if (attn && p == "v_proj") return {&L.wv};
  if (!attn && p == "gate_proj") return {&L.w_gate};
  if (!attn && p == "up_proj") return {&L.w_up};
  return {};
}

// W += scale * B[first_row, first_row + rows) A, accumulated in f32 (as peft's merge does) and rounded back to W's
// type, into a buffer of its own that W then views.
void merge_rows(const LoraUpdate& u, const std::vector<float>& A, const std::vector<float>& B, int64_t first_row,
                const std::string& where, TensorView& W) {
  if (W.dtype != DType::F32 && W.dtype != DType::F16 && W.dtype != DType::BF16)
    throw InputError(where, "module '" + u.module + "': the base weight is " + std::string(dtype_name(W.dtype)) +
                                " (LoRA merges need f32, f16 or bf16 weights)");
  const int64_t out = W.shape[0], in = W.shape[1], r = u.A.shape[0];
  const size_t esz = dtype_size(W.dtype);
  auto buf = std::shared_ptr<uint8_t[]>(new uint8_t[size_t(out * in) * esz]);
  std::vector<float> row(static_cast<size_t>(in));
  const auto* src = static_cast<const uint8_t*>(W.data);
  for (int64_t o = 0; o < out; ++o) {
    widen_to_f32(W.dtype, src + size_t(o * in) * esz, row.data(), size_t(in));
    std::vector<float> delta(size_t(in), 0.f);
    for (int64_t k = 0; k < r; ++k) {
      const float b = B[size_t((first_row + o) * r + k)];
      const float* ak = &A[size_t(k * in)];
      for (int64_t i = 0; i < in; ++i) delta[size_t(i)] += b * ak[i];
    }
    uint8_t* dst = buf.get() + size_t(o * in) * esz;
    for (int64_t i = 0; i < in; ++i) {
      const float v = row[size_t(i)] + delta[size_t(i)] * u.scale;
      if (!std::isfinite(v))
        throw InputError(where, "module '" + u.module + "': the merged weight is not finite (corrupt adapter?)");
      if (W.dtype == DType::F32) std::memcpy(dst + size_t(i) * 4, &v, 4);
      else {
        const uint16_t h = W.dtype == DType::F16 ? f32_to_f16(v) : f32_to_bf16(v);
        std::memcpy(dst + size_t(i) * 2, &h, 2);
      }
    }
  }
  TensorView merged = W;
  merged.name = W.name + "+" + u.module + ".lora";
  merged.data = buf.get();
  merged.keep_alive = std::shared_ptr<const void>(buf, buf.get());
  W = std::move(merged);
}

}  // namespace

bool LoraAdapter::is_adapter_dir(const std::string& dir) {
  return fs::is_directory(dir) && fs::exists(fs::path(dir) / "adapter_config.json") &&
         !fs::exists(fs::path(dir) / "config.json");
}

LoraAdapter LoraAdapter::open(const std::string& dir) {
  LoraAdapter a;
  a.dir = dir;
  a.config_path = (fs::path(dir) / "adapter_config.json").string();
  const std::string& where = a.config_path;
  a.config_text = read_text_file(where);
  json j;
  try {
    j = json::parse(a.config_text);
  } catch (const json::exception& e) {
    throw InputError(where, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) throw InputError(where, "expected a JSON object");
  // Typed reads of optional keys: a key of the wrong type is the file's error, not an exception from the JSON
  // library (the fuzzer found `"peft_type": 1` escaping as nlohmann::type_error).
  auto typed = [&](const char* key, json::value_t want, json dflt) -> json {
    if (!j.contains(key) || j[key].is_null()) return dflt;
    const json& v = j[key];
    const bool ok = want == json::value_t::number_float ? v.is_number() : want == json::value_t::object ? v.is_object()
                    : want == json::value_t::string ? v.is_string() : v.is_boolean();
    if (!ok) throw InputError(where, std::string("\"") + key + "\" has the wrong type (" + v.type_name() + ")");
    return v;
  };
  const std::string type = typed("peft_type", json::value_t::string, "").get<std::string>();
  if (type != "LORA") throw InputError(where, "peft_type is \"" + type + "\"; only LORA adapters are supported");
  reject_unsupported(j, where);
  if (!j.contains("base_model_name_or_path") || !j["base_model_name_or_path"].is_string() ||
      j["base_model_name_or_path"].get<std::string>().empty())
    throw InputError(where, "base_model_name_or_path is missing (the base model this adapter was trained on)");
  const std::string base = j["base_model_name_or_path"].get<std::string>();
  const fs::path near = fs::path(dir) / base;
  if (fs::path(base).is_relative() && fs::exists(near)) a.base_path = near.lexically_normal().string();
  else if (fs::exists(base)) a.base_path = base;
  else
    throw InputError(where, "base model '" + base + "' not found (looked in " + near.lexically_normal().string() +
                                " and relative to the working directory; hub names cannot be downloaded)");
  const double r_default = number(typed("r", json::value_t::number_float, 8), "r", where);
  const double alpha_default = number(typed("lora_alpha", json::value_t::number_float, 8), "lora_alpha", where);
  const bool rslora = typed("use_rslora", json::value_t::boolean, false).get<bool>();
  const json rank_pattern = typed("rank_pattern", json::value_t::object, json::object());
  const json alpha_pattern = typed("alpha_pattern", json::value_t::object, json::object());

  auto store = open_weights(fs::path(dir));
  const std::string wfile = store->files.empty() ? dir : store->files.front();
  // peft saves "base_model.model.<module>.lora_A.weight" (older versions also with ".default" before ".weight").
  static const std::regex key_re(R"(base_model\.model\.(.+)\.lora_([AB])(\.default)?\.weight)");
  std::map<std::string, std::pair<const TensorView*, const TensorView*>> pairs;
  for (const auto& [name, t] : store->all()) {
    std::smatch m;
    if (name.size() > kMaxName)
      throw InputError(wfile, "a tensor name is longer than " + std::to_string(kMaxName) + " characters");
    if (!std::regex_match(name, m, key_re))
      throw InputError(wfile, "tensor '" + name + "' is not a LoRA A/B matrix of a linear layer (unsupported)");
    auto& p = pairs[m[1].str()];
    (m[2].str() == "A" ? p.first : p.second) = &t;
  }
  if (pairs.empty()) throw InputError(wfile, "the adapter has no LoRA matrices");
  for (const auto& [module, p] : pairs) {
    if (!p.first || !p.second)
      throw InputError(wfile, "module '" + module + "' has lora_" + std::string(p.first ? "A" : "B") +
                                  " but not lora_" + std::string(p.first ? "B" : "A"));
    const TensorView &A = *p.first, &B = *p.second;
    for (const TensorView* t : {&A, &B}) {
      if (t->shape.size() != 2 || t->numel() == 0)
        throw InputError(wfile, "tensor '" + t->name + "' must be a non-empty matrix, got " + t->shape_str());
      if (t->dtype != DType::F32 && t->dtype != DType::F16 && t->dtype != DType::BF16)
        throw InputError(wfile, "tensor '" + t->name + "' has dtype " + std::string(dtype_name(t->dtype)));
    }
    if (A.shape[0] != B.shape[1])
      throw InputError(wfile, "module '" + module + "': lora_A is " + A.shape_str() + " and lora_B " + B.shape_str() +
                                  " (their ranks differ)");
    const json* rp = pattern_for(rank_pattern, module, where);
    const json* ap = pattern_for(alpha_pattern, module, where);
    const double r = rp ? number(*rp, "rank_pattern of " + module, where) : r_default;
    const double alpha = ap ? number(*ap, "alpha_pattern of " + module, where) : alpha_default;
    if (int64_t(r) != A.shape[0])
      throw InputError(wfile, "module '" + module + "': lora_A has rank " + std::to_string(A.shape[0]) +
                                  " but adapter_config.json says r = " + std::to_string(int64_t(r)));
    LoraUpdate u;
    u.module = module;
    u.A = A;
    u.B = B;
    u.scale = float(rslora ? alpha / std::sqrt(r) : alpha / r);
    a.updates.push_back(std::move(u));
  }
  return a;
}

void merge_lora(const LoraAdapter& a, const ModelConfig& c, ModelWeights& w) {
  // Shapes are checked against the bound matrices, which the base's loader checked against c.
  const std::string& where = a.config_path;
  const bool wrapped = !c.wrapper_architecture.empty();
  int vision = 0;
  for (const LoraUpdate& u : a.updates) {
    // A vision-language base's vision tower and projector never run on text: their updates change nothing here.
    if (wrapped && (u.module.find("vision_tower.") != std::string::npos ||
                    u.module.find("multi_modal_projector.") != std::string::npos)) {
      ++vision;
      continue;
    }
    const std::vector<TensorView*> parts = target_matrices(w, c, u.module, wrapped);
    if (parts.empty())
      throw InputError(where, "module '" + u.module + "' is not a projection of a decoder layer of the base model (" +
                                  std::to_string(w.layers.size()) + " layers)");
    int64_t out = 0;
    for (const TensorView* W : parts) out += W->shape[0];
    const int64_t in = parts[0]->shape[1];
    if (u.A.shape[1] != in || u.B.shape[0] != out)
      throw InputError(where, "module '" + u.module + "': lora_A " + u.A.shape_str() + " and lora_B " +
                                  u.B.shape_str() + " do not fit the base weight [" + std::to_string(out) + ", " +
                                  std::to_string(in) + "]");
    const std::vector<float> A = u.A.to_f32(), B = u.B.to_f32();
    int64_t first_row = 0;  // of B: where this part's rows start
    for (TensorView* W : parts) {
      merge_rows(u, A, B, first_row, where, *W);
      first_row += W->shape[0];
    }
  }
  if (vision > 0)
    spdlog::info("{}: {} of the adapter's matrices adapt the vision tower, which text generation does not run", where,
                 vision);
}

}  // namespace specscope
