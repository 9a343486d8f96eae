#include "engine/model/model.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/cpu/weight_form.h"
#include "engine/discovery/memory_estimate.h"
#include "engine/discovery/model_probe.h"
#include "engine/formats/mxfp4.h"
#include "engine/formats/safetensors.h"
#include "engine/model/cpu_context.h"
#include "engine/model/gguf_model.h"
#include "engine/model/hf_text_names.h"
#include "engine/model/lora_adapter.h"
#include "engine/model/mla_weights.h"
#include "engine/model/resident_weights.h"
#include "engine/model/tokenizer_fit.h"
#include "engine/model/weight_checks.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "engine/util/huge_page_arena.h"
#include "engine/util/mapped_file.h"
#include "engine/util/sha256.h"

namespace specscope {
namespace fs = std::filesystem;

namespace {

// Binds a matrix, checking its shape against the config (a mismatch is a user's file problem).
TensorView bind_matrix(const TensorStore& st, const std::string& name, int64_t rows, int64_t cols) {
  const TensorView& t = st.get(name);
  if (t.shape.size() != 2 || t.shape[0] != rows || t.shape[1] != cols)
    throw InputError(st.files.front(), "tensor '" + name + "' has shape " + t.shape_str() + ", config.json implies [" +
                                           std::to_string(rows) + ", " + std::to_string(cols) + "]");
  if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
    throw InputError(st.files.front(), "tensor '" + name + "' has dtype " + std::string(dtype_name(t.dtype)) +
                                           " (weights must be f32, f16 or bf16)");
  return t;
}

std::vector<float> bind_vector(const TensorStore& st, const std::string& name, int64_t len) {
  const TensorView& t = st.get(name);
  if (t.shape.size() != 1 || t.shape[0] != len)
    throw InputError(st.files.front(),
                     "tensor '" + name + "' has shape " + t.shape_str() + ", expected [" + std::to_string(len) + "]");
  if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
    throw InputError(st.files.front(), "tensor '" + name + "' must be a float tensor");
  return t.to_f32();
}

std::vector<float> bind_optional_vector(const TensorStore& st, const std::string& name, int64_t len, bool required) {
  if (!st.has(name)) {
    if (required) st.get(name);  // throws "missing tensor"
    return {};
  }
  return bind_vector(st, name, len);
}

// GPT-OSS's experts as its checkpoints store them (transformers' GptOssExperts): all of a layer's experts in one
// tensor per product, gate and up interleaved (gate_up_proj [E, H, 2F]: column 2f is gate row f, 2f + 1 up row f) and
// transposed against a Linear's [out, in] (down_proj [E, F, H]), with biases [E, 2F] (interleaved alike) and [E, H];
// or, as published, in MXFP4 (gate_up_proj_blocks [E, 2F, H/32, 16] and _scales [E, 2F, H/32], rows already
// [out, in]; down_proj_blocks [E, H, F/32, 16]). Either way each expert's gate, up and down become row views of one
// owned [E * rows, cols] copy per product in the engine's layout, in huge pages: the dense ones in their own type, the
// MXFP4 ones in ggml's MXFP4 blocks (engine/formats/mxfp4.h).
class GptOssExpertCopies {
 public:
  GptOssExpertCopies(const TensorStore& st, const ModelConfig& c, const std::string& block)
      : st_(st), E_(c.num_experts), H_(c.hidden_size), F_(c.expert_ffn), block_(block) {}

  void bind(LayerWeights& L) {
    const bool mxfp4 = st_.has(block_ + "experts.gate_up_proj_blocks");
    TensorView gate, up, down;
    if (mxfp4) {
      gate = from_mxfp4("gate_up_proj", 2 * F_, H_, 0, 2, "gate");
      up = from_mxfp4("gate_up_proj", 2 * F_, H_, 1, 2, "up");
      down = from_mxfp4("down_proj", H_, F_, 0, 1, "down");
    } else {
      gate = transposed("gate_up_proj", H_, 2 * F_, 0, 2, "gate");
      up = transposed("gate_up_proj", H_, 2 * F_, 1, 2, "up");
      down = transposed("down_proj", F_, H_, 0, 1, "down");
    }
    const std::vector<float> gate_up_bias = bias("gate_up_proj_bias", 2 * F_), down_bias = bias("down_proj_bias", H_);
    L.experts.resize(size_t(E_));
    for (int64_t e = 0; e < E_; ++e) {
      auto& X = L.experts[size_t(e)];
      const std::string part = "[" + std::to_string(e) + "]";
      X.gate = gate.rows_view(e * F_, F_, part);
      X.up = up.rows_view(e * F_, F_, part);
      X.down = down.rows_view(e * H_, H_, part);
      X.b_gate.resize(size_t(F_));
      X.b_up.resize(size_t(F_));
      for (int64_t f = 0; f < F_; ++f) {
        X.b_gate[size_t(f)] = gate_up_bias[size_t(e * 2 * F_ + 2 * f)];
        X.b_up[size_t(f)] = gate_up_bias[size_t(e * 2 * F_ + 2 * f + 1)];
      }
      X.b_down.assign(down_bias.begin() + e * H_, down_bias.begin() + (e + 1) * H_);
    }
  }

 private:
  const TensorView& get(const std::string& name, const std::vector<int64_t>& shape, bool floats) const {
    const TensorView& t = st_.get(block_ + "experts." + name);
    if (t.shape != shape) {
      std::string want = "[";
      for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
      throw InputError(st_.files.front(), "tensor '" + t.name + "' has shape " + t.shape_str() + ", config.json implies " +
                                              want + "]");
    }
    const bool ok = floats ? (t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16) : t.dtype == DType::U8;
    if (!ok)
      throw InputError(st_.files.front(), "tensor '" + t.name + "' has dtype " + std::string(dtype_name(t.dtype)) +
                                              (floats ? " (expected f32, f16 or bf16)" : " (expected u8 MXFP4 codes)"));
    return t;
  }

  std::vector<float> bias(const std::string& name, int64_t len) const {
    return get(name, {E_, len}, true).to_f32();
  }

  // [E, in, stride * out] stored as x @ W: every expert's rows r = offset, offset + stride, ... of the Linear
  // layout (column r of its stored matrix), as one [E * out, in] matrix of the stored type.
  TensorView transposed(const std::string& name, int64_t in, int64_t cols, int64_t offset, int64_t stride,
                        const char* part) const {
    const TensorView& t = get(name, {E_, in, cols}, true);
    const int64_t out = cols / stride;
    const size_t es = dtype_size(t.dtype);
    auto buf = huge_page_alloc(size_t(E_ * out * in) * es);
    if (es == 2) transpose_experts<uint16_t>(t.data, buf.get(), in, cols, offset, stride);
    else if (es == 4) transpose_experts<uint32_t>(t.data, buf.get(), in, cols, offset, stride);
    else throw InputError(st_.files.front(), "tensor '" + t.name + "' has elements of " + std::to_string(es) + " bytes");
    return owned(t.name + "[" + part + "]", t.dtype, E_ * out, in, buf);
  }

  // The copy `transposed` makes, in tiles of 64 x 64 elements typed by their size, so that each cache line read or
  // written serves many elements. It was one variable-size memcpy an element, striding across a whole expert: 0.13 s
  // against 0.04 s for four experts of a gpt-oss-20b layer's bf16 gate_up (2880 x 5760; a standalone copy of both
  // loops on the Zen 4 host): by that measure about 75 s against 25 s over a whole bf16 gpt-oss-20b (24 layers of
  // gate, up and down).
  template <class T>
  void transpose_experts(const void* from, void* to, int64_t in, int64_t cols, int64_t offset, int64_t stride) const {
    constexpr int64_t kTile = 64;
    const int64_t out = cols / stride;
    const T* src = static_cast<const T*>(from);
    T* dst = static_cast<T*>(to);
    for (int64_t e = 0; e < E_; ++e) {
      const T* s = src + e * in * cols + offset;
      T* d = dst + e * out * in;
      for (int64_t i0 = 0; i0 < in; i0 += kTile)
        for (int64_t o0 = 0; o0 < out; o0 += kTile) {
          const int64_t i1 = std::min(in, i0 + kTile), o1 = std::min(out, o0 + kTile);
          for (int64_t o = o0; o < o1; ++o)
            for (int64_t i = i0; i < i1; ++i) d[o * in + i] = s[i * cols + o * stride];
        }
    }
  }

  // [E, rows, in/32, 16] codes and [E, rows, in/32] scales: rows offset, offset + stride, ... of every expert.
  TensorView from_mxfp4(const std::string& name, int64_t rows, int64_t in, int64_t offset, int64_t stride,
                        const char* part) const {
    if (in % kMxfp4Block)
      throw InputError(st_.files.front(), "tensor '" + block_ + "experts." + name + "_blocks' has rows of " +
                                              std::to_string(in) + " values, not whole MXFP4 blocks of 32");
    const int64_t nb = in / kMxfp4Block, out = rows / stride;
    const TensorView& codes = get(name + "_blocks", {E_, rows, nb, 16}, false);
    const TensorView& scales = get(name + "_scales", {E_, rows, nb}, false);
    const auto* c8 = static_cast<const uint8_t*>(codes.data);
    const auto* s8 = static_cast<const uint8_t*>(scales.data);
    auto row_of = [&](int64_t e, int64_t o) { return e * rows + offset + o * stride; };
    auto buf = huge_page_alloc(size_t(E_ * out * nb) * 17);
    auto* dst = static_cast<uint8_t*>(buf.get());
    for (int64_t e = 0; e < E_; ++e)
      for (int64_t o = 0; o < out; ++o)
        mxfp4_split_to_ggml(c8 + row_of(e, o) * nb * 16, s8 + row_of(e, o) * nb, nb, dst + size_t((e * out + o) * nb) * 17);
    return owned(block_ + "experts." + name + "[" + part + "]", DType::MXFP4, E_ * out, in, std::move(buf));
  }

  static TensorView owned(const std::string& name, DType dt, int64_t rows, int64_t cols, std::shared_ptr<void> buf) {
    TensorView v;
    v.name = name;
    v.dtype = dt;
    v.shape = {rows, cols};
    v.data = buf.get();
    v.keep_alive = std::move(buf);
    v.loader_copy_in_huge_pages = true;
    return v;
  }

  const TensorStore& st_;
  const int64_t E_, H_, F_;
  const std::string block_;
};

// A mixture-of-experts layer's router and experts, under Mixtral's names (block_sparse_moe.gate, experts.E.w1 / w3 /
// w2 for gate / up / down) or Qwen2-MoE's and Qwen3-MoE's (mlp.gate, mlp.experts.E.gate_proj / up_proj / down_proj);
// Qwen2-MoE's shared expert (mlp.shared_expert.*) and its gate (mlp.shared_expert_gate, [1, H]); DeepSeek's names are
// Qwen's, with V3's choice bias beside the router (mlp.gate.e_score_correction_bias) and the shared experts as one
// ungated MLP (mlp.shared_experts.*).
void bind_experts(const TensorStore& st, const ModelConfig& c, const std::string& layer, LayerWeights& L) {
  if (c.architecture == "GptOssForCausalLM") {  // mlp.router (with its bias) and the experts' fused tensors
    L.router = bind_matrix(st, layer + "mlp.router.weight", c.num_experts, c.hidden_size);
    L.router_bias = bind_vector(st, layer + "mlp.router.bias", c.num_experts);
    GptOssExpertCopies(st, c, layer + "mlp.").bind(L);
    return;
  }
  const bool mixtral = c.architecture == "MixtralForCausalLM";
  const std::string block = layer + (mixtral ? "block_sparse_moe." : "mlp.");
  const int64_t H = c.hidden_size, F = c.expert_ffn;
  L.router = bind_matrix(st, block + "gate.weight", c.num_experts, H);
  if (c.mla())  // DeepSeek-V3's e_score_correction_bias beside its router (V2 has none)
    L.expert_choice_bias = bind_optional_vector(st, block + "gate.e_score_correction_bias", c.num_experts,
                                                c.architecture == "DeepseekV3ForCausalLM");
  L.experts.resize(size_t(c.num_experts));
  for (int e = 0; e < c.num_experts; ++e) {
    const std::string p = block + "experts." + std::to_string(e) + ".";
    auto& E = L.experts[size_t(e)];
    E.gate = bind_matrix(st, p + (mixtral ? "w1.weight" : "gate_proj.weight"), F, H);
    E.up = bind_matrix(st, p + (mixtral ? "w3.weight" : "up_proj.weight"), F, H);
    E.down = bind_matrix(st, p + (mixtral ? "w2.weight" : "down_proj.weight"), H, F);
  }
  if (c.shared_expert_ffn > 0) {  // Qwen2-MoE's shared_expert with its gate; DeepSeek's ungated shared_experts
    const int64_t S = c.shared_expert_ffn;
    const std::string p = block + (c.shared_expert_gated ? "shared_expert." : "shared_experts.");
    L.shared_expert = {bind_matrix(st, p + "gate_proj.weight", S, H), bind_matrix(st, p + "up_proj.weight", S, H),
                       bind_matrix(st, p + "down_proj.weight", H, S), {}, {}, {}};
    if (c.shared_expert_gated)
      L.shared_expert_gate = bind_matrix(st, block + "shared_expert_gate.weight", 1, H).to_f32();
  }
}

// DeepSeek's multi-head latent attention (ModelConfig::mla): q_proj, or q_a_proj, q_a_layernorm and q_b_proj; the
// latent's kv_a_proj_with_mqa and kv_a_layernorm; kv_b_proj split per head (mla_weights.h).
void bind_mla(const TensorStore& st, const ModelConfig& c, const std::string& attn, LayerWeights& L) {
  const int64_t H = c.hidden_size, qd = int64_t(c.num_heads) * c.head_dim, R = c.kv_lora_rank;
  if (c.q_lora_rank > 0) {
    L.wq_a = bind_matrix(st, attn + "q_a_proj.weight", c.q_lora_rank, H);
    L.q_a_norm = bind_vector(st, attn + "q_a_layernorm.weight", c.q_lora_rank);
    L.wq = bind_matrix(st, attn + "q_b_proj.weight", qd, c.q_lora_rank);
  } else {
    L.wq = bind_matrix(st, attn + "q_proj.weight", qd, H);
  }
  L.wkv_a = bind_matrix(st, attn + "kv_a_proj_with_mqa.weight", R + c.rotary_dims(), H);
  L.kv_a_norm = bind_vector(st, attn + "kv_a_layernorm.weight", R);
  const TensorView kv_b =
      bind_matrix(st, attn + "kv_b_proj.weight", int64_t(c.num_heads) * (c.nope_dim() + c.value_dim()), R);
  bind_kv_b(kv_b, c, L, st.files.front());
}

ModelIdentity compute_identity(const std::string& path, const ModelConfig& c, const TensorStore& store) {
  ModelIdentity id;
  id.path = fs::absolute(path).lexically_normal().string();
  id.architecture = c.architecture;
  id.config_sha256 = sha256_hex(read_text_file((fs::path(path) / "config.json").string()));
  Sha256 h;  // std::map iterates in name order, so the index hash does not depend on shard layout
  for (const auto& [name, t] : store.all()) {
    h.update(name);
    h.update(" ");
    h.update(dtype_name(t.dtype));
    h.update(" ");
    h.update(t.shape_str());
    h.update("\n");
  }
  id.weights_index_sha256 = h.hex_digest();
  return id;
}

}  // namespace

std::shared_ptr<const Model> Model::load(const std::string& path, const LoadOptions& opts) {
  if (!fs::exists(path)) throw InputError(path, "no such file or directory");
  // Ollama's blobs are GGUF files named by their digest, without the extension: the magic decides.
  if (!fs::is_directory(path) && (fs::path(path).extension() == ".gguf" || discovery::looks_like_gguf(path)))
    return load_gguf_model(path, opts);
  if (!fs::is_directory(path))
    throw InputError(path, "expected a Hugging Face model directory (config.json + *.safetensors + tokenizer.json)");
  if (!LoraAdapter::is_adapter_dir(path)) return load_directory(path, opts, path);
  const LoraAdapter adapter = LoraAdapter::open(path);
  if (fs::exists(fs::path(adapter.base_path) / "adapter_config.json") && !fs::exists(fs::path(adapter.base_path) / "config.json"))
    throw InputError(adapter.config_path, "the base model '" + adapter.base_path + "' is itself an adapter");
  spdlog::info("{}: LoRA adapter with {} matrices on {}", path, adapter.updates.size(), adapter.base_path);
  auto m = load_directory(adapter.base_path, opts, path);
  merge_lora(adapter, m->config_, m->weights_);
  // Identity: the base's config and the adapter's config; the index lists the adapter's matrices too.
  m->path_ = path;
  m->identity_.path = fs::absolute(path).lexically_normal().string();
  m->identity_.config_sha256 = sha256_hex(m->identity_.config_sha256 + adapter.config_text);
  Sha256 h;
  h.update(m->identity_.weights_index_sha256);
  for (const auto& u : adapter.updates) h.update(u.module + " " + u.A.shape_str() + " " + u.B.shape_str() + "\n");
  m->identity_.weights_index_sha256 = h.hex_digest();
  return m;
}

std::shared_ptr<Model> Model::load_directory(const std::string& path, const LoadOptions& opts,
                                             const std::string& files_dir) {
  auto t0 = std::chrono::steady_clock::now();
  auto m = std::make_shared<Model>();
  m->path_ = path;
  fs::path dir(path);
  m->config_ = ModelConfig::from_file((dir / "config.json").string());
  const auto& c = m->config_;
  spdlog::info("loading {}: {}", path, c.summary());

  auto store = std::make_shared<TensorStore>(TensorStore::open_dir(path));
  const HfTextNames names = hf_text_names(c, *store);
  const int64_t H = c.hidden_size, F = c.intermediate_size, V = c.vocab_size;
  const int64_t qd = int64_t(c.num_heads) * c.head_dim, kvd = int64_t(c.num_kv_heads) * c.head_dim;
  auto& w = m->weights_;
  auto norm = [&](const std::string& name, int64_t n) {
    std::vector<float> v = bind_vector(*store, name, n);
    if (c.norm_weight_offset != 0.f)
      for (float& x : v) x += c.norm_weight_offset;
    return v;
  };
  w.embed = bind_matrix(*store, names.model + "embed_tokens.weight", V, H);
  w.layers.resize(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = names.model + "layers." + std::to_string(l) + ".";
    auto& L = w.layers[l];
    if (!c.pre_norms) {  // OLMo: its post_attention_layernorm is on the attention's output
      L.attn_out_norm = norm(p + "post_attention_layernorm.weight", H);
      L.ffn_out_norm = norm(p + "post_feedforward_layernorm.weight", H);
    } else if (c.sandwich_norms) {
      L.input_norm = norm(p + "input_layernorm.weight", H);
      L.attn_out_norm = norm(p + "post_attention_layernorm.weight", H);
      L.post_attn_norm = norm(p + "pre_feedforward_layernorm.weight", H);
      L.ffn_out_norm = norm(p + "post_feedforward_layernorm.weight", H);
    } else {
      L.input_norm = norm(p + "input_layernorm.weight", H);
      L.post_attn_norm = norm(p + "post_attention_layernorm.weight", H);
    }
    if (c.mla()) {
      bind_mla(*store, c, p + "self_attn.", L);
    } else if (c.fused_projections) {
      bind_fused_qkv(L, bind_matrix(*store, p + "self_attn.qkv_proj.weight", qd + 2 * kvd, H), qd, kvd);
    } else {
      L.wq = bind_matrix(*store, p + "self_attn.q_proj.weight", qd, H);
      L.wk = bind_matrix(*store, p + "self_attn.k_proj.weight", kvd, H);
      L.wv = bind_matrix(*store, p + "self_attn.v_proj.weight", kvd, H);
    }
    L.wo = bind_matrix(*store, p + "self_attn.o_proj.weight", H, int64_t(c.num_heads) * c.value_dim());
    L.bq = bind_optional_vector(*store, p + "self_attn.q_proj.bias", qd, c.attention_bias);
    L.bk = bind_optional_vector(*store, p + "self_attn.k_proj.bias", kvd, c.attention_bias);
    L.bv = bind_optional_vector(*store, p + "self_attn.v_proj.bias", kvd, c.attention_bias);
    if (c.architecture != "Qwen2ForCausalLM" && c.architecture != "Qwen2MoeForCausalLM")  // biases on q, k, v only
      L.bo = bind_optional_vector(*store, p + "self_attn.o_proj.bias", H, c.attention_bias);
    if (c.attention_sinks) L.sinks = bind_vector(*store, p + "self_attn.sinks", c.num_heads);
    if (c.qk_norm) {
      L.q_norm = norm(p + "self_attn.q_norm.weight", c.qk_norm_width(false));
      L.k_norm = norm(p + "self_attn.k_norm.weight", c.qk_norm_width(true));
    }
    if (c.moe_layer(l)) {
      bind_experts(*store, c, p, L);
      continue;
    }
    if (c.fused_projections) {
      bind_fused_gate_up(L, bind_matrix(*store, p + "mlp.gate_up_proj.weight", 2 * F, H), F);
    } else {
      L.w_gate = bind_matrix(*store, p + "mlp.gate_proj.weight", F, H);
      L.w_up = bind_matrix(*store, p + "mlp.up_proj.weight", F, H);
    }
    L.w_down = bind_matrix(*store, p + "mlp.down_proj.weight", H, F);
    L.b_gate = bind_optional_vector(*store, p + "mlp.gate_proj.bias", F, c.mlp_bias);
    L.b_up = bind_optional_vector(*store, p + "mlp.up_proj.bias", F, c.mlp_bias);
    L.b_down = bind_optional_vector(*store, p + "mlp.down_proj.bias", H, c.mlp_bias);
  }
  w.final_norm = norm(names.model + "norm.weight", H);
  // Tied models reuse the embedding; some tied checkpoints still carry an (identical) lm_head copy.
  w.lm_head = c.tie_word_embeddings ? w.embed : bind_matrix(*store, names.lm_head, V, H);
  // The NaN scan reads every weight of the language model (a wrapper's vision tower is never read): the part of a
  // load worth reporting progress on.
  uint64_t total = 0, done = 0;
  for (auto& [name, t] : store->all())
    if (names.owns(name)) total += t.nbytes();
  m->n_params_ = names.parameters(*store);
  if (opts.progress) opts.progress(0, total);
  for (auto& [name, t] : store->all()) {
    if (!names.owns(name)) continue;
    if (opts.check_finite && (t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16))
      check_finite(t, store->files.front());
    done += t.nbytes();
    if (opts.progress) opts.progress(done, total);
  }
  m->store_ = store;
  m->identity_ = compute_identity(path, c, *store);

  // Tokenizer, chat template and generation defaults (an adapter's own files win).
  const fs::path fdir = fs::exists(fs::path(files_dir) / "tokenizer.json") ? fs::path(files_dir) : dir;
  const std::string tok_json = (fdir / "tokenizer.json").string();
  const std::string tok_cfg = (fdir / "tokenizer_config.json").string();
  if (!fs::exists(tok_json)) throw InputError(tok_json, "missing (SpecScope reads Hugging Face tokenizer.json files)");
  m->tokenizer_ = Tokenizer::from_files(tok_json, fs::exists(tok_cfg) ? tok_cfg : "");
  m->chat_template_ = ChatTemplate::from_tokenizer_config(tok_cfg);
  const std::string gen_path = fs::exists(fs::path(files_dir) / "generation_config.json")
                                   ? (fs::path(files_dir) / "generation_config.json").string()
                                   : (dir / "generation_config.json").string();
  if (fs::exists(gen_path)) {
    nlohmann::json g;
    try {
      g = nlohmann::json::parse(read_text_file(gen_path));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(gen_path, std::string("invalid JSON: ") + e.what());
    }
    if (g.contains("temperature") && g["temperature"].is_number()) m->gen_.temperature = g["temperature"].get<float>();
    if (g.contains("top_p") && g["top_p"].is_number()) m->gen_.top_p = g["top_p"].get<float>();
    if (g.contains("top_k") && g["top_k"].is_number_integer()) m->gen_.top_k = g["top_k"].get<int>();
    if (g.contains("eos_token_id")) {
      auto& e = g["eos_token_id"];
      if (e.is_number_integer()) m->gen_.eos_token_ids.push_back(e.get<int>());
      else if (e.is_array())
        for (auto& x : e)
          if (x.is_number_integer()) m->gen_.eos_token_ids.push_back(x.get<int>());
    }
  }
  auto add_eos = [&](int id) {
    if (id >= 0 && id < c.vocab_size && std::find(m->eos_ids_.begin(), m->eos_ids_.end(), id) == m->eos_ids_.end())
      m->eos_ids_.push_back(id);
  };
  for (int id : c.eos_token_ids) add_eos(id);
  for (int id : m->gen_.eos_token_ids) add_eos(id);
  if (m->tokenizer_->eos_id) add_eos(*m->tokenizer_->eos_id);
  check_tokenizer_fits(*m->tokenizer_, c.vocab_size, tok_json);

  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("loaded {} ({:.1f}M parameters, {} weights, tokenizer {}, chat template {}) in {:.2f}s", path,
               double(m->parameter_count()) / 1e6, m->weights_dtype(), m->tokenizer_->kind(),
               m->chat_template_->family_name(), secs);
  return m;
}

std::string Model::weights_dtype() const {
  if (!stored_dtype_.empty()) return stored_dtype_;
  return std::string(dtype_name(weights_.embed.dtype));
}

uint64_t Model::parameter_count() const { return n_params_; }

std::unique_ptr<Context> Model::new_cpu_context(int n_ctx, cpu::WeightForm form) const {
  return std::make_unique<CpuContext>(shared_from_this(), n_ctx, form);
}

std::shared_ptr<const ModelWeights> Model::requantized_weights(cpu::WeightForm form) const {
  const auto i = size_t(form);
  std::call_once(requant_once_[i], [this, form, i] {
    if (form == cpu::WeightForm::AsLoaded || !cpu::weight_form_supported(form)) return;
    auto w = std::make_shared<ModelWeights>(weights_);
    for_each_linear(*w, [form](TensorView& W) { cpu::requantize(W, form); });
    requantized_[i] = std::move(w);
  });
  return requantized_[i];
}

std::shared_ptr<const ModelWeights> Model::resident_weights(
    const std::function<void(uint64_t done, uint64_t total)>& progress) const {
  std::call_once(resident_once_, [&] {
    resident_ = resident_copy(weights_, weight_memory(), discovery::mem_available_bytes(), path_, progress);
  });
  return resident_;
}

}  // namespace specscope
