#include "engine/heads/eagle_head.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/cpu/weight_form.h"
#include "engine/cpu/matmul.h"
#include "engine/cpu/ops.h"
#include "engine/heads/head_files.h"
#include "engine/model/model.h"
#include "engine/util/error.h"

namespace specscope {

namespace {

const TensorView& matrix(const TensorStore& st, const std::string& name, int64_t rows, int64_t cols) {
  const TensorView& t = st.get(name);
  if (t.shape.size() != 2 || t.shape[0] != rows || t.shape[1] != cols)
    throw InputError(st.files.front(), "tensor '" + name + "' has shape " + t.shape_str() + ", expected [" +
                                           std::to_string(rows) + ", " + std::to_string(cols) + "]");
  if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
    throw InputError(st.files.front(), "tensor '" + name + "' must be f32, f16 or bf16");
  return t;
}

std::vector<float> vec(const TensorStore& st, const std::string& name, int64_t len, bool required = true) {
  if (!st.has(name) && !required) return {};
  const TensorView& t = st.get(name);
  if (t.numel() != len || t.shape.size() != 1)
    throw InputError(st.files.front(), "tensor '" + name + "' has shape " + t.shape_str() + ", expected [" +
                                           std::to_string(len) + "]");
  return t.to_f32();
}

void log_softmax_rows(float* x, int rows, int n) {
  for (int r = 0; r < rows; ++r) cpu::log_softmax(x + size_t(r) * n, n);
}

}  // namespace

std::shared_ptr<const EagleHead> EagleHead::load(const std::string& dir, const Model& target, cpu::WeightForm form) {
  auto head = std::make_shared<EagleHead>();
  std::string text = read_head_config(dir);
  const std::string cfg_path = dir + "/config.json";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(cfg_path, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) throw InputError(cfg_path, "expected a JSON object");
  // Head configs are Llama configs with one layer (EAGLE-3's name their own architecture): read them as such.
  j["architectures"] = {"LlamaForCausalLM"};
  j["model_type"] = "llama";
  if (!j.contains("vocab_size")) j["vocab_size"] = target.config().vocab_size;
  head->cfg_ = ModelConfig::from_json_text(j.dump(), cfg_path);
  head->inv_freq_ = rope_inv_freq(head->cfg_);
  auto store = open_head_weights(dir, {"model.safetensors", "pytorch_model.bin"});
  head->store_ = store;
  const auto& tc = target.config();
  const int64_t H = head->cfg_.hidden_size, F = head->cfg_.intermediate_size;
  const int64_t qd = int64_t(head->cfg_.num_heads) * head->cfg_.head_dim;
  const int64_t kvd = int64_t(head->cfg_.num_kv_heads) * head->cfg_.head_dim;
  const bool eagle3 = store->has("midlayer.self_attn.q_proj.weight");
  head->kind_ = eagle3 ? Kind::Eagle3 : Kind::Eagle1;
  const std::string p = eagle3 ? "midlayer." : "layers.0.";
  const int64_t in_dim = eagle3 ? 2 * H : H;
  auto& L = head->layer_;
  L.in_dim = int(in_dim);
  L.wq = matrix(*store, p + "self_attn.q_proj.weight", qd, in_dim);
  L.wk = matrix(*store, p + "self_attn.k_proj.weight", kvd, in_dim);
  L.wv = matrix(*store, p + "self_attn.v_proj.weight", kvd, in_dim);
  L.wo = matrix(*store, p + "self_attn.o_proj.weight", H, qd);
  L.bq = vec(*store, p + "self_attn.q_proj.bias", qd, false);
  L.bk = vec(*store, p + "self_attn.k_proj.bias", kvd, false);
  L.bv = vec(*store, p + "self_attn.v_proj.bias", kvd, false);
  L.w_gate = matrix(*store, p + "mlp.gate_proj.weight", F, H);
  L.w_up = matrix(*store, p + "mlp.up_proj.weight", F, H);
  L.w_down = matrix(*store, p + "mlp.down_proj.weight", H, F);
  L.post_attn_norm = vec(*store, p + "post_attention_layernorm.weight", H);
  head->embed_ = store->has("embed_tokens.weight") ? matrix(*store, "embed_tokens.weight", tc.vocab_size, H)
                                                   : target.weights().embed;
  if (head->embed_.shape[1] != H)
    throw InputError(cfg_path, "the head's hidden size " + std::to_string(H) + " differs from the target's " +
                                   std::to_string(head->embed_.shape[1]) + " (is this head for another model?)");
  if (!eagle3) {
    if (H != tc.hidden_size) throw InputError(cfg_path, "EAGLE-1 head hidden size differs from the target's");
    head->feature_dim_ = int(H);
    head->fc_ = matrix(*store, "fc.weight", H, 2 * H);
    head->fc_bias_ = vec(*store, "fc.bias", H, false);
    head->lm_head_ = target.weights().lm_head;
    head->draft_vocab_ = tc.vocab_size;
  } else {
    const int64_t TH = j.value("target_hidden_size", int64_t(tc.hidden_size));
    if (TH != tc.hidden_size)
      throw InputError(cfg_path, "target_hidden_size " + std::to_string(TH) + " differs from the target model's " +
                                     std::to_string(tc.hidden_size));
    head->feature_dim_ = int(3 * TH);
    head->fc_ = matrix(*store, "fc.weight", H, 3 * TH);
    head->input_norm_ = vec(*store, "midlayer.input_layernorm.weight", H);
    head->hidden_norm_ = vec(*store, "midlayer.hidden_norm.weight", H);
    head->final_norm_ = vec(*store, "norm.weight", H);
    const int64_t dv = j.value("draft_vocab_size", int64_t(tc.vocab_size));
    head->lm_head_ = matrix(*store, "lm_head.weight", dv, H);
    head->draft_vocab_ = int(dv);
    if (store->has("d2t")) {
      const TensorView& d2t = store->get("d2t");
      if (d2t.dtype != DType::I64 || d2t.numel() != dv)
        throw InputError(store->files.front(), "d2t must be int64 [draft_vocab_size]");
      head->d2t_.assign(static_cast<const int64_t*>(d2t.data), static_cast<const int64_t*>(d2t.data) + dv);
      for (int64_t i = 0; i < dv; ++i)
        if (i + head->d2t_[i] < 0 || i + head->d2t_[i] >= tc.vocab_size)
          throw InputError(store->files.front(), "d2t maps draft id " + std::to_string(i) + " outside the vocabulary");
    } else if (dv != tc.vocab_size) {
      throw InputError(store->files.front(), "draft_vocab_size differs from the vocabulary but there is no d2t");
    }
    // The official code records the inputs of layers 2, N/2 and N-3 as its layer loop reaches them, so the
    // concatenation is in ascending layer order.
    const int N = tc.num_layers;
    head->tap_layers_ = {2, N / 2, N - 3};
    std::sort(head->tap_layers_.begin(), head->tap_layers_.end());
    if (head->tap_layers_[0] < 0 || head->tap_layers_[2] >= N ||
        std::adjacent_find(head->tap_layers_.begin(), head->tap_layers_.end()) != head->tap_layers_.end())
      throw InputError(cfg_path, "EAGLE-3 needs the inputs of three distinct layers 2, N/2, N-3; the target has " +
                                     std::to_string(N) + " layers");
  }
  // The head's linear weights: requantized when asked, and, since heads always run on the CPU, their kernels' copies
  // made now (cpu::prepare_linear). EAGLE-1's LM head is the target's: lm_head_ is a view of it, so requantizing
  // gives the head a copy of its own and leaves the target's as loaded. Every draft level reads the whole LM head,
  // which as loaded was about half of a level's time on the shipped base: held-out eagle2 at 4 and 8 nodes 1.27-1.28x
  // and 1.23-1.24x vanilla with the bf16 LM head, 1.37-1.38x and 1.31-1.32x with an int4 copy, tau the same
  // (bench/results/cpu_amx_direct_store_2026-12-05/notes.txt).
  HeadLayerWeights& hl = head->layer_;
  for (TensorView* W :
       {&head->fc_, &hl.wq, &hl.wk, &hl.wv, &hl.wo, &hl.w_gate, &hl.w_up, &hl.w_down, &head->lm_head_}) {
    cpu::requantize(*W, form);
    cpu::prepare_linear(*W);
  }
  spdlog::info("loaded {} head from {} ({:.2f}M parameters)", eagle3 ? "EAGLE-3" : "EAGLE-1", dir,
               double(head->parameter_count()) / 1e6);
  return head;
}

std::vector<HiddenTap> EagleHead::target_taps() const {
  if (kind_ == Kind::Eagle1) return {HiddenTap::final_norm()};
  std::vector<HiddenTap> taps;
  for (int l : tap_layers_) taps.push_back(HiddenTap::layer_input(l));
  return taps;
}

uint64_t EagleHead::parameter_count() const {
  uint64_t n = 0;
  for (auto& [name, t] : store_->all())
    if (name != "embed_tokens.weight" && name != "d2t" && name != "t2d") n += uint64_t(t.numel());
  return n;
}

void EagleHead::forward(const float* features, int fdim, const int32_t* tokens, const int32_t* positions, int n,
                        HeadCache& cache, const std::vector<std::vector<int>>* tree_visible, float* out) const {
  const int H = cfg_.hidden_size;
  std::vector<float> emb(size_t(n) * H);
  for (int i = 0; i < n; ++i) cpu::embedding_row(embed_, tokens[i], emb.data() + size_t(i) * H);
  std::vector<float> attn_in;
  if (kind_ == Kind::Eagle1) {
    // fc(concat(embedding, feature)): the token is the one *after* the feature's position (EAGLE's shift).
    std::vector<float> cat(size_t(n) * 2 * H);
    for (int i = 0; i < n; ++i) {
      std::memcpy(cat.data() + size_t(i) * 2 * H, emb.data() + size_t(i) * H, sizeof(float) * H);
      std::memcpy(cat.data() + size_t(i) * 2 * H + H, features + size_t(i) * fdim, sizeof(float) * H);
    }
    cpu::linear(cat.data(), n, fc_, fc_bias_.empty() ? nullptr : fc_bias_.data(), out);
    attn_in.assign(out, out + size_t(n) * H);  // layer 0 has no input_layernorm
  } else {
    if (fdim == feature_dim_) cpu::linear(features, n, fc_, nullptr, out);  // fuse low/mid/high features
    else std::memcpy(out, features, sizeof(float) * size_t(n) * H);        // the head's own output
    std::vector<float> a(size_t(n) * H), b(size_t(n) * H);
    cpu::rmsnorm(emb.data(), input_norm_.data(), a.data(), n, H, cfg_.rms_norm_eps);
    cpu::rmsnorm(out, hidden_norm_.data(), b.data(), n, H, cfg_.rms_norm_eps);
    attn_in.resize(size_t(n) * 2 * H);
    for (int i = 0; i < n; ++i) {
      std::memcpy(attn_in.data() + size_t(i) * 2 * H, a.data() + size_t(i) * H, sizeof(float) * H);
      std::memcpy(attn_in.data() + size_t(i) * 2 * H + H, b.data() + size_t(i) * H, sizeof(float) * H);
    }
  }
  head_layer_forward(layer_, cfg_, inv_freq_, attn_in.data(), out, n, positions, cache, tree_visible);
}

void EagleHead::log_probs(const float* hidden, int n, float* out) const {
  const int H = cfg_.hidden_size;
  if (kind_ == Kind::Eagle1) {
    cpu::linear(hidden, n, lm_head_, nullptr, out);
  } else {
    std::vector<float> normed(size_t(n) * H);
    cpu::rmsnorm(hidden, final_norm_.data(), normed.data(), n, H, cfg_.rms_norm_eps);
    cpu::linear(normed.data(), n, lm_head_, nullptr, out);
  }
  log_softmax_rows(out, n, draft_vocab_);
}

}  // namespace specscope
