#include <atomic>
#include <climits>

#include "engine/cpu/thread_pool.h"
#include "engine/model/gguf_model.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>

#include "engine/formats/gguf.h"
#include "engine/formats/gguf_file_type.h"
#include "engine/model/gguf_config.h"
#include "engine/model/mla_weights.h"
#include "engine/model/gguf_end_of_generation.h"
#include "engine/model/tokenizer_fit.h"
#include "engine/model/weight_checks.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/gguf_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "engine/util/sha256.h"

namespace specscope {
namespace fs = std::filesystem;

namespace {

// Sizes of metadata value types in an array (strings are handled separately).
size_t elem_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::BOOL: return 1;
    case GgufValueType::UINT16: case GgufValueType::INT16: return 2;
    case GgufValueType::UINT32: case GgufValueType::INT32: case GgufValueType::FLOAT32: return 4;
    default: return 8;
  }
}

// Hash of every key, type and value in file order: the "config" of a GGUF model.
std::string metadata_sha256(const GgufFile& g) {
  Sha256 h;
  auto u64 = [&](uint64_t x) { h.update(&x, sizeof x); };
  auto str = [&](const std::string& s) {
    u64(s.size());
    h.update(s);
  };
  for (const auto& [key, v] : g.metadata()) {
    str(key);
    u64(uint64_t(v.type));
    switch (v.type) {
      case GgufValueType::STRING: str(v.str); break;
      case GgufValueType::FLOAT32: case GgufValueType::FLOAT64: h.update(&v.f, sizeof v.f); break;
      case GgufValueType::ARRAY:
        u64(uint64_t(v.elem_type));
        u64(v.count);
        if (v.elem_type == GgufValueType::STRING)
          for (const auto& s : v.strings) str(s);
        else if (v.elems)
          h.update(v.elems, size_t(v.count) * elem_size(v.elem_type));
        break;
      case GgufValueType::INT8: case GgufValueType::INT16: case GgufValueType::INT32: case GgufValueType::INT64:
        u64(uint64_t(v.i));
        break;
      default: u64(v.u);  // unsigned integers and bool
    }
  }
  return h.hex_digest();
}

std::string tensor_index_sha256(const GgufFile& g) {
  std::vector<const GgufTensor*> ts;
  for (const auto& t : g.tensors()) ts.push_back(&t);
  std::sort(ts.begin(), ts.end(), [](auto* a, auto* b) { return a->name < b->name; });
  Sha256 h;
  for (const auto* t : ts) {
    h.update(t->name);
    h.update(" ");
    h.update(t->shape_str());
    h.update("\n");
  }
  return h.hex_digest();
}

// The engine dtype that holds a ggml block type as is.
std::optional<DType> block_dtype(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0: return DType::Q8_0;
    case GgmlType::Q4_0: return DType::Q4_0;
    case GgmlType::Q4_1: return DType::Q4_1;
    case GgmlType::Q5_0: return DType::Q5_0;
    case GgmlType::Q5_1: return DType::Q5_1;
    case GgmlType::Q4_K: return DType::Q4_K;
    case GgmlType::Q5_K: return DType::Q5_K;
    case GgmlType::Q6_K: return DType::Q6_K;
    case GgmlType::MXFP4: return DType::MXFP4;
    default: return std::nullopt;
  }
}

// Binds GGUF tensors to the engine's weight structures, checking names, shapes and types against the config.
// `dry`: checks only (what the models listing asks of a file, gguf_load_problem): every name, shape and type and
// the head order is looked at, no weight is read or copied, and the views and vectors it returns hold no data.
class Binder {
 public:
  Binder(const GgufFile& g, bool check, std::function<void(uint64_t, uint64_t)> progress, bool dry = false)
      : g_(g), check_(check && !dry), dry_(dry), progress_(std::move(progress)) {
    for (const auto& t : g_.tensors()) total_ += t.nbytes;
    if (progress_) progress_(0, total_);
  }

  // Every tensor bound so far counted as done (the NaN scan and the row reordering are what take the time).
  void finish() {
    if (progress_) progress_(total_, total_);
  }

  // A [rows, cols] matrix. `unpermute_heads` > 0: the rows are llama.cpp's interleaved-RoPE order for that many
  // heads and are put back in HF order.
  TensorView matrix(const std::string& name, int64_t rows, int64_t cols, int unpermute_heads = 0) {
    return bind_matrix(tensor(name, {rows, cols}), rows, cols, unpermute_heads);
  }

  // One row of `cols` widened to f32, stored as [1, cols] or as a vector: llama.cpp's converter writes transformers'
  // Linear(H, 1) as [1, H] and its loader asks for {H}, accepting either.
  std::vector<float> row(const std::string& name, int64_t cols) {
    const GgufTensor* t = g_.find_tensor(name);
    if (!t || t->shape() == std::vector<int64_t>{cols}) return vector(name, cols);
    return widened(tensor(name, {1, cols}));
  }

  // A stack of `count` [rows, cols] matrices stored as one [count, rows, cols] tensor (llama.cpp's ffn_*_exps: one
  // matrix per expert), each returned as a view of its rows of the same memory.
  std::vector<TensorView> stacked(const std::string& name, int64_t count, int64_t rows, int64_t cols) {
    const TensorView all = bind_matrix(tensor(name, {count, rows, cols}), count * rows, cols, 0);
    std::vector<TensorView> parts;
    for (int64_t e = 0; e < count; ++e) parts.push_back(all.rows_view(e * rows, rows, "[" + std::to_string(e) + "]"));
    return parts;
  }

  // `count` vectors of `len` stored as one [count, len] tensor (GPT-OSS's per-expert biases), widened to f32.
  std::vector<std::vector<float>> stacked_vectors(const std::string& name, int64_t count, int64_t len) {
    const std::vector<float> all = widened(tensor(name, {count, len}));
    std::vector<std::vector<float>> parts;
    parts.resize(size_t(count));
    for (int64_t e = 0; e < count; ++e) parts[size_t(e)].assign(all.begin() + e * len, all.begin() + (e + 1) * len);
    return parts;
  }

  // Points `v` at an owned copy of `t` with its rows in HF order (same type: whole rows are whole blocks).
  void reorder_rows(TensorView& v, const GgufTensor& t, int heads) const {
    const int64_t rows = t.rows();
    auto buf = std::make_shared<std::vector<uint8_t>>(size_t(rows) * t.row_bytes());
    const auto order = hf_row_order(rows, heads, t.name);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(buf->data() + size_t(order[r]) * t.row_bytes(), t.row(r), t.row_bytes());
    v.data = buf->data();
    v.keep_alive = buf;
  }

  std::vector<float> vector(const std::string& name, int64_t len, int unpermute_heads = 0) {
    std::vector<float> v = widened(tensor(name, {len}));
    if (!unpermute_heads) return v;
    const auto order = hf_row_order(len, unpermute_heads, name);  // checked in a dry bind too
    if (dry_) return v;
    std::vector<float> hf(v.size());
    for (int64_t r = 0; r < len; ++r) hf[size_t(order[r])] = v[size_t(r)];
    return hf;
  }

  std::vector<float> optional_vector(const std::string& name, int64_t len, int unpermute_heads = 0) {
    return has(name) ? vector(name, len, unpermute_heads) : std::vector<float>{};
  }

  bool has(const std::string& name) const { return g_.find_tensor(name) != nullptr; }
  bool quantized() const { return quantized_; }
  bool dry() const { return dry_; }
  const std::string& path() const { return g_.path(); }

 private:
  // Tensor t's values widened to f32 (a dry bind: only whether they can be, and as many zeros).
  std::vector<float> widened(const GgufTensor& t) {
    if (!dry_) return dequant(t);
    if (!ggml_can_dequantize(t.type)) cannot_read(t);
    return std::vector<float>(size_t(t.rows() * t.cols()));
  }

  // Tensor t, whose shape tensor() checked, as a [rows, cols] matrix (its rows: ne[1] * ne[2] * ne[3] of the file's).
  TensorView bind_matrix(const GgufTensor& t, int64_t rows, int64_t cols, int unpermute_heads) {
    const bool plain = t.type == GgmlType::F32 || t.type == GgmlType::F16 || t.type == GgmlType::BF16;
    if (dry_) {
      if (unpermute_heads) hf_row_order(rows, unpermute_heads, t.name);
      if (!plain && !block_dtype(t.type)) unsupported(t);
      TensorView v;
      v.name = t.name;
      v.shape = {rows, cols};
      return v;
    }
    if (plain) {
      TensorView v = t.view(g_.path());
      v.shape = {rows, cols};
      if (check_) check_finite(v, g_.path());
      if (unpermute_heads) reorder_rows(v, t, unpermute_heads);
      return v;
    }
    const std::optional<DType> dt = block_dtype(t.type);
    if (!dt) unsupported(t);
    // Block-quantized: kept in its blocks, zero-copy unless its rows are reordered (whole rows are whole blocks).
    TensorView v;
    v.name = t.name;
    v.dtype = *dt;
    v.shape = {rows, cols};
    v.data = t.data;
    v.keep_alive = t.keep_alive;
    if (unpermute_heads) reorder_rows(v, t, unpermute_heads);
    if (check_) check_finite_blocks(t);
    quantized_ = true;
    return v;
  }

  [[noreturn]] void unsupported(const GgufTensor& t) const {
    throw InputError(g_.path(), "tensor '" + t.name + "' has type " + std::string(ggml_type_name(t.type)) +
                                    " (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4)");
  }
  [[noreturn]] void cannot_read(const GgufTensor& t) const {
    throw InputError(g_.path(), "tensor '" + t.name + "' has type " + std::string(ggml_type_name(t.type)) +
                                    ", which SpecScope cannot read");
  }

  const GgufTensor& tensor(const std::string& name, const std::vector<int64_t>& shape) {
    const GgufTensor* t = g_.find_tensor(name);
    if (!t) throw InputError(g_.path(), "missing tensor '" + name + "'");
    if (dry_) {
      if (t->shape() != shape) shape_mismatch(*t, shape);
      return *t;
    }
    // Reported when the next tensor is asked for: the previous one is checked by then.
    if (progress_) progress_(std::min(done_, total_), total_);
    // A multi-gigabyte file takes seconds: the log (the CLI's stderr) says how far it is, a quarter at a time.
    if (total_ >= (uint64_t(1) << 30) && int(done_ * 4 / total_) > logged_quarters_) {
      logged_quarters_ = int(done_ * 4 / total_);
      spdlog::info("{}: {}% of the weights checked", g_.path(), logged_quarters_ * 25);
    }
    done_ += t->nbytes;
    if (t->shape() != shape) shape_mismatch(*t, shape);
    return *t;
  }

  [[noreturn]] void shape_mismatch(const GgufTensor& t, const std::vector<int64_t>& shape) const {
    std::string want = "[";
    for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
    throw InputError(g_.path(), "tensor '" + t.name + "' is " + t.shape_str() + ", the metadata implies " + want + "]");
  }

  // A NaN/Inf scale makes whole blocks NaN: dequantize every row once (in parallel) and look.
  void check_finite_blocks(const GgufTensor& t) {
    std::atomic<bool> bad{false};
    const int64_t rows = t.rows();
    cpu::run_team(int(std::min<int64_t>(rows, INT32_MAX)), size_t(rows) * size_t(t.cols()), size_t(1) << 16,
                  [&](int tid, int nt) {
                    std::vector<float> row(size_t(t.cols()));
                    for (int64_t r = rows * tid / nt; r < rows * (tid + 1) / nt && !bad.load(); ++r) {
                      dequantize_row(t.type, t.row(r), row.data(), t.cols());
                      for (float x : row)
                        if (!std::isfinite(x)) {
                          bad.store(true);
                          break;
                        }
                    }
                  });
    if (bad) throw InputError(g_.path(), "tensor '" + t.name + "' contains NaN or Inf values (corrupt weights?)");
  }

  std::vector<float> dequant(const GgufTensor& t) {
    if (!ggml_can_dequantize(t.type)) cannot_read(t);
    std::vector<float> v = g_.dequantize(t);
    if (check_)
      for (float x : v)
        if (!std::isfinite(x)) throw InputError(g_.path(), "tensor '" + t.name + "' contains NaN or Inf values");
    return v;
  }

  // order[gguf_row] = HF row. llama.cpp's permute: w.reshape(n_head, 2, hd/2, in).swapaxes(1, 2), so GGUF row
  // h*hd + 2i + j holds HF row h*hd + j*hd/2 + i.
  std::vector<int64_t> hf_row_order(int64_t rows, int n_head, const std::string& name) const {
    if (rows % n_head || (rows / n_head) % 2)
      throw InputError(g_.path(), "tensor '" + name + "' rows do not split into " + std::to_string(n_head) +
                                      " heads of even size");
    const int64_t hd = rows / n_head, half = hd / 2;
    std::vector<int64_t> order(static_cast<size_t>(rows));
    for (int64_t h = 0; h < n_head; ++h)
      for (int64_t i = 0; i < half; ++i)
        for (int64_t j = 0; j < 2; ++j) order[size_t(h * hd + 2 * i + j)] = h * hd + j * half + i;
    return order;
  }

  const GgufFile& g_;
  bool check_, dry_;
  bool quantized_ = false;
  std::function<void(uint64_t, uint64_t)> progress_;
  uint64_t done_ = 0, total_ = 0;
  int logged_quarters_ = 0;
};

// deepseek2's latent attention (llama.cpp's names): attn_q, or attn_q_a, attn_q_a_norm and attn_q_b; attn_kv_a_mqa and
// attn_kv_a_norm; kv_b as llama.cpp's converter has split it since 2025, attn_k_b [heads][kv_lora][nope] and attn_v_b
// [heads][v][kv_lora] (each head's part a view), or whole as attn_kv_b in older files (mla_weights.h).
void bind_mla(Binder& b, const ModelConfig& c, const std::string& p, LayerWeights& L) {
  const int64_t H = c.hidden_size, qd = int64_t(c.num_heads) * c.head_dim, R = c.kv_lora_rank;
  if (c.q_lora_rank > 0) {
    L.wq_a = b.matrix(p + "attn_q_a.weight", c.q_lora_rank, H);
    L.q_a_norm = b.vector(p + "attn_q_a_norm.weight", c.q_lora_rank);
    L.wq = b.matrix(p + "attn_q_b.weight", qd, c.q_lora_rank);
  } else {
    L.wq = b.matrix(p + "attn_q.weight", qd, H);
  }
  L.wkv_a = b.matrix(p + "attn_kv_a_mqa.weight", R + c.rotary_dims(), H);
  L.kv_a_norm = b.vector(p + "attn_kv_a_norm.weight", R);
  if (b.has(p + "attn_k_b.weight") || !b.has(p + "attn_kv_b.weight")) {
    L.k_b = b.stacked(p + "attn_k_b.weight", c.num_heads, R, c.nope_dim());
    L.v_b = b.stacked(p + "attn_v_b.weight", c.num_heads, c.value_dim(), R);
  } else {
    const TensorView kv_b =
        b.matrix(p + "attn_kv_b.weight", int64_t(c.num_heads) * (c.nope_dim() + c.value_dim()), R);
    if (!b.dry()) bind_kv_b(kv_b, c, L, b.path());
  }
}

// Every weight of the model `c` describes, bound from the file (or, with a dry binder, checked).
void bind_weights(Binder& b, const ModelConfig& c, ModelWeights& w) {
  const std::string& path = b.path();
  // See gguf_model.h; Mixtral's files are llama's, and SmolLM3's are written by llama.cpp's LlamaModel converter.
  const bool permuted = c.model_type == "llama" || c.model_type == "mixtral" || c.model_type == "granite" ||
                        c.model_type == "smollm3";
  const int64_t H = c.hidden_size, F = c.intermediate_size, V = c.vocab_size;
  const int64_t qd = int64_t(c.num_heads) * c.head_dim, kvd = int64_t(c.num_kv_heads) * c.head_dim;
  w.embed = b.matrix("token_embd.weight", V, H);
  w.layers.resize(size_t(c.num_layers));
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    auto& L = w.layers[size_t(l)];
    if (c.pre_norms) {  // (olmo2 has none)
      L.input_norm = b.vector(p + "attn_norm.weight", H);
      // Gemma's pre_feedforward_layernorm; gpt-oss names the norm before its MLP post_attention_norm
      L.post_attn_norm = b.vector(p + (c.model_type == "gpt_oss" ? "post_attention_norm.weight" : "ffn_norm.weight"), H);
    }
    if (c.sandwich_norms) {  // stored as 1 + w by llama.cpp's converter (ModelConfig::norm_weight_offset)
      L.attn_out_norm = b.vector(p + "post_attention_norm.weight", H);
      L.ffn_out_norm = b.vector(p + "post_ffw_norm.weight", H);
    }
    if (c.mla()) {  // deepseek2 (interleaved RoPE: nothing permuted)
      bind_mla(b, c, p, L);
    } else if (c.fused_projections) {  // Phi-3 (NEOX RoPE: nothing permuted)
      bind_fused_qkv(L, b.matrix(p + "attn_qkv.weight", qd + 2 * kvd, H), qd, kvd);
    } else {
      L.wq = b.matrix(p + "attn_q.weight", qd, H, permuted ? c.num_heads : 0);
      L.wk = b.matrix(p + "attn_k.weight", kvd, H, permuted ? c.num_kv_heads : 0);
      L.wv = b.matrix(p + "attn_v.weight", kvd, H);
    }
    L.wo = b.matrix(p + "attn_output.weight", H, int64_t(c.num_heads) * c.value_dim());
    L.bq = b.optional_vector(p + "attn_q.bias", qd, permuted ? c.num_heads : 0);
    L.bk = b.optional_vector(p + "attn_k.bias", kvd, permuted ? c.num_kv_heads : 0);
    L.bv = b.optional_vector(p + "attn_v.bias", kvd);
    L.bo = b.optional_vector(p + "attn_output.bias", H);
    if (c.attention_bias && (L.bq.empty() || L.bk.empty() || L.bv.empty()))
      throw InputError(path, "missing q/k/v bias tensors in layer " + std::to_string(l) + " (required for " +
                                 c.model_type + ")");
    if (c.attention_sinks) L.sinks = b.vector(p + "attn_sinks.weight", c.num_heads);
    if (c.qk_norm) {
      L.q_norm = b.vector(p + "attn_q_norm.weight", c.qk_norm_width(false));
      L.k_norm = b.vector(p + "attn_k_norm.weight", c.qk_norm_width(true));
    }
    if (c.moe_layer(l)) {  // the router, then each expert's gate, up and down
      const int64_t E = c.num_experts, FE = c.expert_ffn;
      L.router = b.matrix(p + "ffn_gate_inp.weight", E, H);
      if (c.mla()) L.expert_choice_bias = b.optional_vector(p + "exp_probs_b.bias", E);  // DeepSeek-V3's
      L.experts.resize(size_t(E));
      if (b.has(p + "ffn_gate_exps.weight") || !b.has(p + "ffn_gate.0.weight")) {  // row views of one stacked tensor
        const auto gate = b.stacked(p + "ffn_gate_exps.weight", E, FE, H), up = b.stacked(p + "ffn_up_exps.weight", E, FE, H),
                   down = b.stacked(p + "ffn_down_exps.weight", E, H, FE);
        for (size_t e = 0; e < size_t(E); ++e) L.experts[e] = {gate[e], up[e], down[e], {}, {}, {}};
        if (c.expert_bias) {  // gpt-oss: the router's and each expert's biases
          L.router_bias = b.vector(p + "ffn_gate_inp.bias", E);
          auto bg = b.stacked_vectors(p + "ffn_gate_exps.bias", E, FE), bu = b.stacked_vectors(p + "ffn_up_exps.bias", E, FE),
               bd = b.stacked_vectors(p + "ffn_down_exps.bias", E, H);
          for (size_t e = 0; e < size_t(E); ++e) {
            L.experts[e].b_gate = std::move(bg[e]);
            L.experts[e].b_up = std::move(bu[e]);
            L.experts[e].b_down = std::move(bd[e]);
          }
        }
      } else {  // llama.cpp's first Mixtral layout (until April 2024, which it no longer reads): a tensor per expert
        for (int64_t e = 0; e < E; ++e) {
          const std::string x = "." + std::to_string(e) + ".weight";
          L.experts[size_t(e)] = {b.matrix(p + "ffn_gate" + x, FE, H), b.matrix(p + "ffn_up" + x, FE, H),
                                  b.matrix(p + "ffn_down" + x, H, FE), {}, {}, {}};
        }
      }
      if (c.shared_expert_ffn > 0) {  // the shared expert (llama.cpp's *_shexp) and qwen2moe's gate on it
        const int64_t S = c.shared_expert_ffn;
        L.shared_expert = {b.matrix(p + "ffn_gate_shexp.weight", S, H), b.matrix(p + "ffn_up_shexp.weight", S, H),
                           b.matrix(p + "ffn_down_shexp.weight", H, S), {}, {}, {}};
        if (c.shared_expert_gated) L.shared_expert_gate = b.row(p + "ffn_gate_inp_shexp.weight", H);
      }
      continue;
    }
    if (c.fused_projections) {  // llama.cpp's phi3 keeps gate and up in ffn_up (its swiglu halves: gate first)
      bind_fused_gate_up(L, b.matrix(p + "ffn_up.weight", 2 * F, H), F);
    } else {
      L.w_gate = b.matrix(p + "ffn_gate.weight", F, H);
      L.w_up = b.matrix(p + "ffn_up.weight", F, H);
    }
    L.w_down = b.matrix(p + "ffn_down.weight", H, F);
  }
  w.final_norm = b.vector("output_norm.weight", H);
  w.lm_head = c.tie_word_embeddings ? w.embed : b.matrix("output.weight", V, H);
}

// RoPE's per-frequency divisors, which llama.cpp's converter writes as tensors: llama3 scaling's rope_freqs.weight
// (head_dim/2 values), and LongRoPE's two lists (rotary_dim/2 values each; Phi-3.5, Phi-4-mini), both or neither.
// Each value must be a positive divisor. The rest of LongRoPE's parameters are metadata (gguf_config.cpp,
// phi3_from_gguf). A dry binder checks names and shapes only.
void bind_rope_factors(Binder& b, const GgufFile& g, ModelConfig& c) {
  if (g.find_tensor("rope_freqs.weight")) {
    c.rope_freq_factors = b.vector("rope_freqs.weight", c.head_dim / 2);
    if (!b.dry())
      for (float f : c.rope_freq_factors)
        if (!(f > 0.f)) throw InputError(g.path(), "tensor 'rope_freqs.weight' has a value that is not positive");
  }
  const bool has_long = g.find_tensor("rope_factors_long.weight"), has_short = g.find_tensor("rope_factors_short.weight");
  if (!has_long && !has_short) return;
  if (has_long != has_short)
    throw InputError(g.path(), std::string("tensor '") + (has_long ? "rope_factors_long" : "rope_factors_short") +
                                   ".weight' without '" + (has_long ? "rope_factors_short" : "rope_factors_long") +
                                   ".weight'");
  if (c.model_type != "phi3")
    throw InputError(g.path(), "LongRoPE factor tensors (rope_factors_*) in a " + c.model_type + " file are not supported");
  auto& r = c.rope_scaling;
  r.type = "longrope";
  for (auto [name, factors] : {std::pair{"rope_factors_long.weight", &r.long_factor}, {"rope_factors_short.weight", &r.short_factor}}) {
    *factors = b.vector(name, c.rotary_dims() / 2);
    if (!b.dry())
      for (float f : *factors)
        if (!(f > 0.f) || !std::isfinite(f))
          throw InputError(g.path(), std::string("tensor '") + name + "' has a value that is not a positive number");
  }
}

bool is_rope_tensor(const std::string& name) {
  return name == "rope_freqs.weight" || name == "rope_factors_long.weight" || name == "rope_factors_short.weight";
}

}  // namespace

uint64_t gguf_parameter_count(const GgufFile& g) {
  uint64_t n = 0;
  for (const auto& t : g.tensors())
    if (!is_rope_tensor(t.name) && !t.name.starts_with("v.") && !t.name.starts_with("mm."))
      n += uint64_t(t.numel());
  return n;
}

std::string gguf_load_problem(const GgufFile& g) {
  try {
    ModelConfig c = config_from_gguf(g, g.find_tensor("output.weight") == nullptr);
    check_tokenizer_fits(*tokenizer_from_gguf(g), c.vocab_size, g.path(), /*warn=*/false);
    // Every tensor the loader binds, by name, shape and type, without reading a weight (tensors it does not bind,
    // such as a vision tower's, may be of any type, as for the loader).
    Binder dry(g, false, {}, /*dry=*/true);
    bind_rope_factors(dry, g, c);
    ModelWeights w;
    bind_weights(dry, c, w);
  } catch (const InputError& e) {
    return e.problem();
  }
  return "";
}

std::shared_ptr<const Model> load_gguf_model(const std::string& path, const LoadOptions& opts) {
  auto t0 = std::chrono::steady_clock::now();
  auto g = std::make_shared<GgufFile>(GgufFile::open(path));
  auto m = std::make_shared<Model>();
  m->path_ = path;
  m->config_ = config_from_gguf(*g, g->find_tensor("output.weight") == nullptr);
  auto& c = m->config_;
  spdlog::info("loading {}: {}", path, c.summary());

  // Tokenizer before weights: every metadata problem is reported before any tensor is touched.
  m->tokenizer_ = tokenizer_from_gguf(*g);
  m->chat_template_ = chat_template_from_gguf(*g, *m->tokenizer_);
  check_tokenizer_fits(*m->tokenizer_, c.vocab_size, path);

  Binder b(*g, opts.check_finite, opts.progress);
  bind_rope_factors(b, *g, c);
  bind_weights(b, c, m->weights_);
  b.finish();

  const uint64_t n_params = gguf_parameter_count(*g);
  m->n_params_ = n_params;
  // The file's quantization as llama.cpp names it ("q4_k_m": its matrices are Q4_K and Q6_K).
  const std::string stored = gguf_file_type_name(*g);
  m->stored_dtype_ = stored;

  m->identity_.path = fs::absolute(path).lexically_normal().string();
  m->identity_.architecture = "gguf:" + g->get_string("general.architecture");
  m->identity_.config_sha256 = metadata_sha256(*g);
  m->identity_.weights_index_sha256 = tensor_index_sha256(*g);

  auto add_eos = [&](int id) {
    if (id >= 0 && id < c.vocab_size && std::find(m->eos_ids_.begin(), m->eos_ids_.end(), id) == m->eos_ids_.end())
      m->eos_ids_.push_back(id);
  };
  // A GGUF file has no generation_config.json: its replies end where llama.cpp ends them.
  for (int id : gguf_end_of_generation_ids(*g, *m->tokenizer_, c.eos_token_ids, c.vocab_size)) add_eos(id);
  if (m->tokenizer_->eos_id) add_eos(*m->tokenizer_->eos_id);

  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("loaded {} ({:.1f}M parameters, {} weights{}, tokenizer {}, chat template {}) in {:.2f}s", path,
               double(n_params) / 1e6, stored, b.quantized() ? " kept quantized" : "", m->tokenizer_->kind(),
               m->chat_template_->family_name(), secs);
  return m;
}

}  // namespace specscope
