// The CUDA backend's greedy decode of a Llama model emulated on the CPU from the kernels' own references
// (kernels/kernel_refs.h), in the order kernels/cuda_context.cpp launches them, beside the CPU backend's greedy
// decode of the same prompts: on how many prompts they agree, and where they first part. A tool for telling a GPU
// bug (the GPU parts from this emulation) from the GPU path's own numerics (the emulation parts as the GPU does),
// on a machine without a GPU. Products: the activations rounded to the weights' 16-bit type, as to_half makes the
// GPU's product inputs (--f32-activations keeps them f32), each output summed in double (gemv_ref).
//
//   cuda_path_emulation MODEL PROMPTS.jsonl [--prompts N] [--max-tokens N] [--f32-activations]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/cpu/matmul.h"
#include "engine/generate/generator.h"
#include "engine/model/config.h"
#include "engine/model/model.h"
#include "engine/sampling/sampler.h"
#include "engine/util/dtype.h"
#include "kernels/kernel_refs.h"

using namespace specscope;
namespace ref = specscope::cuda::ref;

namespace {

cuda::WType wtype_of(const TensorView& t) {
  switch (t.dtype) {
    case DType::F32: return cuda::WType::F32;
    case DType::F16: return cuda::WType::F16;
    case DType::BF16: return cuda::WType::BF16;
    default: throw std::runtime_error(t.name + ": the emulation takes f32, f16 or bf16 weights");
  }
}

class EmulatedCuda {
 public:
  EmulatedCuda(const Model& m, int n_ctx, bool f32_activations)
      : m_(m), c_(m.config()), w_(m.weights()), f32_act_(f32_activations), n_ctx_(n_ctx) {
    kv_ = c_.num_kv_heads * c_.head_dim;
    kc_.assign(c_.num_layers, std::vector<float>(size_t(n_ctx) * kv_));
    vc_.assign(c_.num_layers, std::vector<float>(size_t(n_ctx) * kv_));
    slot_pos_.assign(size_t(n_ctx), 0);
    inv_freq_ = rope_inv_freq(c_);
  }

  // The last row's logits after a causal forward of `tokens` at the next positions.
  std::vector<float> forward(const std::vector<int32_t>& tokens) {
    const int n = int(tokens.size()), H = c_.hidden_size, nh = c_.num_heads, nkv = c_.num_kv_heads,
              hd = c_.head_dim, F = c_.intermediate_size, base = n_past_;
    std::vector<int32_t> pos(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) pos[size_t(i)] = slot_pos_[size_t(base + i)] = base + i;
    std::vector<float> x(size_t(n) * H), h(x.size()), q(size_t(n) * nh * hd), k(size_t(n) * kv_), v(k.size());
    std::vector<float> att(q.size()), g(size_t(n) * F), u(g.size());
    ref::embed_gather(w_.embed.data, wtype_of(w_.embed), tokens.data(), n, H, x.data());
    for (int l = 0; l < c_.num_layers; ++l) {
      const auto& L = w_.layers[size_t(l)];
      ref::rmsnorm(x.data(), L.input_norm.data(), h.data(), n, H, c_.rms_norm_eps);
      linear(h, n, L.wq, q);
      linear(h, n, L.wk, k);
      linear(h, n, L.wv, v);
      ref::rope(q.data(), n, nh, hd, pos.data(), inv_freq_.data());
      ref::rope(k.data(), n, nkv, hd, pos.data(), inv_freq_.data());
      std::copy(k.begin(), k.end(), kc_[size_t(l)].begin() + size_t(base) * kv_);
      std::copy(v.begin(), v.end(), vc_[size_t(l)].begin() + size_t(base) * kv_);
      ref::attention(q.data(), kc_[size_t(l)].data(), vc_[size_t(l)].data(), slot_pos_.data(), nullptr, pos.data(), n,
                     base, nh, nkv, hd, c_.window_of(l), c_.attn_soft_cap, att.data());
      linear(att, n, L.wo, h);
      ref::add(h.data(), x.data(), int64_t(n) * H);
      ref::rmsnorm(x.data(), L.post_attn_norm.data(), h.data(), n, H, c_.rms_norm_eps);
      linear(h, n, L.w_gate, g);
      linear(h, n, L.w_up, u);
      ref::silu_mul(g.data(), u.data(), g.data(), int64_t(n) * F);
      linear(g, n, L.w_down, h);
      ref::add(h.data(), x.data(), int64_t(n) * H);
    }
    std::vector<float> last(x.end() - H, x.end()), normed(static_cast<size_t>(H)), logits(static_cast<size_t>(c_.vocab_size));
    ref::rmsnorm(last.data(), w_.final_norm.data(), normed.data(), 1, H, c_.rms_norm_eps);
    linear(normed, 1, w_.lm_head, logits);
    n_past_ += n;
    return logits;
  }

 private:
  // Y [n, m] = X [n, k] W^T: X rounded to W's 16-bit type first (to_half), as the GPU's products take it.
  void linear(const std::vector<float>& X, int n, const TensorView& W, std::vector<float>& Y) const {
    const int m = int(W.rows()), k = int(W.cols());
    const cuda::WType t = wtype_of(W);
    if (t == cuda::WType::F32 || f32_act_) {
      for (int r = 0; r < n; ++r)
        for (int j = 0; j < m; ++j) {
          double acc = 0;
          for (int c = 0; c < k; ++c) {
            const int64_t i = int64_t(j) * k + c;
            const float wv = t == cuda::WType::F32   ? static_cast<const float*>(W.data)[i]
                             : t == cuda::WType::BF16 ? bf16_to_f32(static_cast<const uint16_t*>(W.data)[i])
                                                      : f16_to_f32(static_cast<const uint16_t*>(W.data)[i]);
            acc += double(wv) * X[size_t(r) * k + size_t(c)];
          }
          Y[size_t(r) * m + size_t(j)] = float(acc);
        }
      return;
    }
    std::vector<uint16_t> xh(size_t(n) * k);
    ref::to_half(X.data(), xh.data(), t, int64_t(n) * k);
    ref::gemv(W.data, t, xh.data(), n, m, k, Y.data());
  }

  const Model& m_;
  const ModelConfig& c_;
  const ModelWeights& w_;
  bool f32_act_;
  int n_ctx_, kv_ = 0, n_past_ = 0;
  std::vector<std::vector<float>> kc_, vc_;
  std::vector<int32_t> slot_pos_;
  std::vector<float> inv_freq_;
};

std::vector<int32_t> greedy(const Model& m, EmulatedCuda& e, const std::vector<int32_t>& prompt, int max_tokens) {
  std::vector<int32_t> out;
  std::vector<float> logits = e.forward(prompt);
  const auto& eos = m.eos_ids();
  for (int s = 0; s < max_tokens; ++s) {
    const int32_t t = argmax(logits.data(), int(logits.size()));
    if (std::find(eos.begin(), eos.end(), t) != eos.end()) break;
    out.push_back(t);
    if (s + 1 == max_tokens) break;
    logits = e.forward({t});
  }
  return out;
}

int first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i]) return int(i);
  return a.size() == b.size() ? -1 : int(std::min(a.size(), b.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL PROMPTS.jsonl [--prompts N] [--max-tokens N] [--f32-activations]\n", argv[0]);
    return 2;
  }
  int prompts = 80, max_tokens = 96;
  bool f32_act = false;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--prompts" && i + 1 < argc) prompts = std::atoi(argv[++i]);
    else if (a == "--max-tokens" && i + 1 < argc) max_tokens = std::atoi(argv[++i]);
    else if (a == "--f32-activations") f32_act = true;
    else {
      std::fprintf(stderr, "%s: unknown argument %s\n", argv[0], a.c_str());
      return 2;
    }
  }
  auto model = Model::load(argv[1]);
  std::ifstream in(argv[2]);
  std::string line;
  int done = 0, same_exact = 0, same_default = 0;
  while (done < prompts && std::getline(in, line)) {
    if (line.empty()) continue;
    const std::string text = nlohmann::json::parse(line).value("prompt", "");
    const auto ids = encode_prompt(*model, text, /*chat=*/true);
    EmulatedCuda emu(*model, int(ids.size()) + max_tokens + 1, f32_act);
    const auto e = greedy(*model, emu, ids, max_tokens);
    GenerateOptions opts;
    opts.max_tokens = max_tokens;
    std::vector<int32_t> cpu_paths[2];
    for (int exact = 0; exact < 2; ++exact) {
      const bool was = cpu::set_quant_exact(exact == 1);
      auto ctx = model->new_cpu_context(int(ids.size()) + max_tokens + 1);
      cpu_paths[exact] = generate(*model, *ctx, ids, opts).tokens;
      cpu::set_quant_exact(was);
    }
    const int d_default = first_difference(e, cpu_paths[0]), d_exact = first_difference(e, cpu_paths[1]);
    same_default += d_default < 0;
    same_exact += d_exact < 0;
    std::printf("prompt %2d: %3zu tokens; first difference from the CPU's default path at %3d, exact path at %3d\n",
                done, e.size(), d_default, d_exact);
    std::fflush(stdout);
    ++done;
  }
  std::printf("emulated CUDA path (%s activations) identical to the CPU's default path on %d/%d prompts, to its exact "
              "path on %d/%d\n",
              f32_act ? "f32" : "16-bit", same_default, done, same_exact, done);
  return 0;
}
