#include "engine/heads/medusa_head.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/cpu/matmul.h"
#include "engine/heads/head_files.h"
#include "engine/model/model.h"
#include "engine/util/error.h"

namespace specscope {

std::shared_ptr<const MedusaHeads> MedusaHeads::load(const std::string& dir, const Model& target, cpu::WeightForm form) {
  auto m = std::make_shared<MedusaHeads>();
  const std::string cfg_path = dir + "/config.json";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_head_config(dir));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(cfg_path, std::string("invalid JSON: ") + e.what());
  }
  auto store = open_head_weights(dir, {"medusa_lm_head.safetensors", "medusa_lm_head.pt", "model.safetensors"});
  m->store_ = store;
  const int64_t H = target.config().hidden_size, V = target.config().vocab_size;
  m->hidden_ = int(H);
  m->vocab_ = int(V);
  m->num_layers_ = j.value("medusa_num_layers", 1);
  int n_heads = j.value("medusa_num_heads", 5);
  if (n_heads < 1 || n_heads > 64 || m->num_layers_ < 0 || m->num_layers_ > 16)
    throw InputError(cfg_path, "medusa_num_heads / medusa_num_layers out of range");
  // Uploaded configs sometimes list more heads than the file holds: use the ones present.
  while (n_heads > 0 && !store->has(std::to_string(n_heads - 1) + "." + std::to_string(m->num_layers_) + ".weight"))
    --n_heads;
  if (n_heads == 0) throw InputError(store->files.front(), "no Medusa head tensors ('0.N.weight') found");
  auto check = [&](const TensorView& t, std::vector<int64_t> shape) {
    if (t.shape != shape)
      throw InputError(store->files.front(), "tensor '" + t.name + "' has shape " + t.shape_str() +
                                                 " (hidden/vocab must match the target model)");
    if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
      throw InputError(store->files.front(), "tensor '" + t.name + "' must be f32, f16 or bf16");
    return t;
  };
  for (int i = 0; i < n_heads; ++i) {
    Head h;
    for (int l = 0; l < m->num_layers_; ++l) {
      const std::string p = std::to_string(i) + "." + std::to_string(l) + ".linear.";
      h.w.push_back(check(store->get(p + "weight"), {H, H}));
      h.b.push_back(check(store->get(p + "bias"), {H}).to_f32());
    }
    h.out = check(store->get(std::to_string(i) + "." + std::to_string(m->num_layers_) + ".weight"), {V, H});
    m->heads_.push_back(std::move(h));
  }
  for (auto& h : m->heads_) {  // heads run on the CPU: requantized when asked, their kernels' copies made now
    for (auto& w : h.w) cpu::requantize(w, form), cpu::prepare_linear(w);
    cpu::requantize(h.out, form);
    cpu::prepare_linear(h.out);
  }
  spdlog::info("loaded {} Medusa heads from {}", n_heads, dir);
  return m;
}

uint64_t MedusaHeads::parameter_count() const {
  uint64_t n = 0;
  for (auto& [name, t] : store_->all()) n += uint64_t(t.numel());
  return n;
}

void MedusaHeads::logits(int head, const float* hidden, float* out) const {
  const Head& h = heads_.at(head);
  std::vector<float> x(hidden, hidden + hidden_), y(hidden_);
  for (size_t l = 0; l < h.w.size(); ++l) {
    cpu::linear(x.data(), 1, h.w[l], h.b[l].data(), y.data());
    for (int i = 0; i < hidden_; ++i) x[i] += y[i] / (1.f + std::exp(-y[i]));  // x + SiLU(Wx + b)
  }
  cpu::linear(x.data(), 1, h.out, nullptr, out);
}

}  // namespace specscope
