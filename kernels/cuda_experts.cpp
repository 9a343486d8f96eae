// The MLP of a mixture-of-experts layer on the GPU (Mixtral, Qwen2-MoE, Qwen3-MoE; the CPU's is
// engine/model/cpu_moe.cpp): the router's product, the routing (kernels/experts.cu) and every chosen expert's products
// with the expert picked on the device, so that nothing waits for the host and the forward can still be captured as
// one CUDA graph; then each row's weighted sum, and Qwen2-MoE's shared expert times sigmoid of its gate. After the
// forward, the routing of the main rows comes back to count the experts each layer ran (Context::experts_computed,
// which every recorded step reports).
#include <algorithm>

#include "engine/model/model.h"
#include "kernels/cuda_context_impl.h"
#include "kernels/llama_kernels.h"

namespace specscope::cuda {

CudaContext::ExpertScratch CudaContext::ExpertBuffers::take(const ModelConfig& c, int rows) {
  const size_t r = size_t(rows), picks = r * size_t(c.experts_per_token), H = size_t(c.hidden_size);
  ExpertScratch s;
  s.router = router.get<float>(r * size_t(c.num_experts));
  s.ids = ids.get<int32_t>(size_t(c.num_layers) * picks);
  s.weights = weights.get<float>(picks);
  s.gate = gate.get<float>(picks * size_t(c.expert_ffn));
  s.up = up.get<float>(picks * size_t(c.expert_ffn));
  s.outs = outs.get<float>(picks * H);
  if (rows > 1) {  // a decode's picks are distinct experts: nothing to group
    s.group_bound = expert_groups_bound(int(picks), c.num_experts);
    s.order = order.get<int32_t>(picks);
    s.groups = groups.get<ExpertGroup>(size_t(s.group_bound));
  }
  if (c.shared_expert_ffn > 0) {
    s.shared_gate = shared_gate.get<float>(r * size_t(c.shared_expert_ffn));
    s.shared_up = shared_up.get<float>(r * size_t(c.shared_expert_ffn));
    s.shared_out = shared_out.get<float>(r * H);
    s.shared_scales = shared_scales.get<float>(r);
  }
  return s;
}

void CudaContext::moe_mlp(const DeviceLayer& L, int rows, const LayerScratch& s) {
  const auto& c = model_->config();
  const int H = c.hidden_size, k = c.experts_per_token, F = c.expert_ffn;
  const ExpertScratch& m = *s.moe;
  // This layer's slice of the routing, kept until the forward ends for count_experts.
  int32_t* ids = m.ids + size_t(&L - dm_->layers.data()) * size_t(rows) * size_t(k);
  timer_.mark("router", stream_);
  linear(s.h, rows, L.router, nullptr, m.router);
  route_experts(m.router, rows, c.num_experts, k, c.norm_topk_prob, ids, m.weights, stream_);
  timer_.mark("experts", stream_);
  const DeviceExperts& X = L.experts;
  // Several rows: their picks grouped by expert once, for the three products (the same bits as one pick a block).
  const ExpertGrouping groups{m.order, m.groups, m.group_bound};
  const ExpertGrouping* grouping = rows > 1 ? &groups : nullptr;
  if (grouping) group_expert_picks(ids, rows * k, c.num_experts, m.order, m.groups, stream_);
  // Every pick of a row multiplies the row's input (a pick stride of 0); the down products each their own.
  expert_products(X.gate.data, X.gate.type, F, H, ids, rows, k, s.h, H, 0, m.gate, stream_, grouping);
  expert_products(X.up.data, X.up.type, F, H, ids, rows, k, s.h, H, 0, m.up, stream_, grouping);
  gated_activation(m.gate, m.up, int64_t(rows) * k * F);
  expert_products(X.down.data, X.down.type, H, F, ids, rows, k, m.gate, int64_t(k) * F, F, m.outs, stream_, grouping);
  const float* shared = nullptr;
  if (L.shared_expert_gate) {
    timer_.mark("shared_expert", stream_);
    linear_each(s.h, rows, {{&L.shared_gate, nullptr, m.shared_gate}, {&L.shared_up, nullptr, m.shared_up}});
    gated_activation(m.shared_gate, m.shared_up, int64_t(rows) * c.shared_expert_ffn);
    linear(m.shared_gate, rows, L.shared_down, nullptr, m.shared_out);
    shared_expert_scales(L.shared_expert_gate, s.h, rows, H, m.shared_scales, stream_);  // reads s.h before the sum
    shared = m.shared_out;
  }
  timer_.mark("norms+adds", stream_);
  sum_expert_outputs(m.outs, m.weights, rows, k, H, shared, m.shared_scales, s.h, stream_);
}

// The experts the forward's main rows ran, as the CPU counts them (ExpertRouting::experts_hit). A Speculative
// Streaming forward's stream rows are not counted here, where the CPU's stream_layer counts them too: no streaming
// model for a mixture of experts exists, and their routing would be one more copy back a layer.
void CudaContext::count_experts(int n) {
  const auto& c = model_->config();
  const size_t picks = size_t(n) * size_t(c.experts_per_token);
  std::vector<uint8_t> hit(size_t(c.num_experts));
  for (int l = 0; l < c.num_layers; ++l) {
    if (!c.moe_layer(l)) continue;
    std::fill(hit.begin(), hit.end(), uint8_t(0));
    const int32_t* ids = host_ids_.data() + size_t(l) * picks;
    for (size_t i = 0; i < picks; ++i)
      if (ids[i] >= 0 && ids[i] < c.num_experts) hit[size_t(ids[i])] = 1;
    experts_computed += uint64_t(std::count(hit.begin(), hit.end(), uint8_t(1)));
  }
}

}  // namespace specscope::cuda
