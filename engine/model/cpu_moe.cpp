// The MLP of a mixture-of-experts layer on the CPU (ModelConfig::num_experts; Mixtral, Qwen2-MoE, Qwen3-MoE, GPT-OSS
// with its biases on the router and every expert product): each
// expert computes the rows routed to it, gathered into one product per matrix, and each row sums its experts' outputs
// times their weights in expert order, then (Qwen2-MoE) the shared expert's output times sigmoid of its gate, as
// transformers' Qwen2MoeSparseMoeBlock adds them. A one-token step reads the router and experts_per_token experts of
// the layer; a verification batch reads every expert any of its rows picked (ExpertRouting::experts_hit), which is why
// speculation costs more per drafted token on these models than on dense ones.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/cpu/matmul.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/op_profile.h"
#include "engine/model/cpu_context.h"
#include "engine/model/model.h"

namespace specscope {

// h_ holds the `rows` normed inputs; the experts' weighted sum replaces them.
void CpuContext::moe_mlp(const LayerWeights& L, int rows) {
  const auto& c = model_->config();
  const int H = c.hidden_size, E = c.num_experts, F = c.expert_ffn;
  grow(router_, size_t(rows) * E);
  cpu::linear(h_.data(), rows, L.router, bias_or_null(L.router_bias), router_.data());
  {
    const cpu::ProfileScope profile(cpu::Op::Elementwise);
    routing_.route(router_.data(), rows, routing_rule(c, L));
  }
  moe_out_.assign(size_t(rows) * H, 0.f);
  if (rows == 1) return one_token_experts(L);
  const int most = [&] {
    int m = 0;
    for (int e = 0; e < E; ++e) m = std::max(m, routing_.count(e));
    return m;
  }();
  grow(moe_x_, size_t(most) * H);
  grow(moe_y_, size_t(most) * H);
  grow(ffn_gate_, size_t(most) * F);
  grow(ffn_up_, size_t(most) * F);
  for (int e = 0; e < E; ++e) {
    const int m = routing_.count(e);
    if (m == 0) continue;
    const ExpertWeights& X = L.experts[size_t(e)];
    int i = 0;
    for (const ExpertRoute* r = routing_.begin(e); r != routing_.end(e); ++r, ++i)
      std::memcpy(moe_x_.data() + size_t(i) * H, h_.data() + size_t(r->row) * H, sizeof(float) * H);
    const cpu::LinearOutput gate_up[] = {{&X.gate, bias_or_null(X.b_gate), ffn_gate_.data()},
                                         {&X.up, bias_or_null(X.b_up), ffn_up_.data()}};
    cpu::linear_shared_input(moe_x_.data(), m, gate_up);
    gated_activation(ffn_gate_.data(), ffn_up_.data(), int64_t(m) * F);
    cpu::linear(ffn_gate_.data(), m, X.down, bias_or_null(X.b_down), moe_y_.data());
    const cpu::ProfileScope profile(cpu::Op::Elementwise);
    i = 0;
    for (const ExpertRoute* r = routing_.begin(e); r != routing_.end(e); ++r, ++i)
      cpu::axpy(r->weight, moe_y_.data() + size_t(i) * H, moe_out_.data() + size_t(r->row) * H, H);
  }
  if (L.has_shared_expert()) add_shared_expert(L, rows);
  std::memcpy(h_.data(), moe_out_.data(), sizeof(float) * size_t(rows) * H);
  experts_computed += uint64_t(routing_.experts_hit());
}

// A decode step's one row: every chosen expert multiplies the same input, so their gate and up products go to the
// thread team in one fork, and their down products in another (linear_shared_input and linear_each give each product
// the bits its own call would: a one-token step stays the same bits as that row in a verification batch, which greedy
// losslessness needs). Two forks a layer instead of one per product: 81 to 25 a step on four Qwen3-30B-A3B layers.
void CpuContext::one_token_experts(const LayerWeights& L) {
  const auto& c = model_->config();
  const int H = c.hidden_size, F = c.expert_ffn, k = c.experts_per_token;
  grow(ffn_gate_, size_t(k) * F);
  grow(ffn_up_, size_t(k) * F);
  grow(moe_y_, size_t(k) * H);
  expert_outputs_.clear();
  expert_inputs_.clear();
  for (int e = 0; e < c.num_experts; ++e)
    if (routing_.count(e) > 0) {  // the i-th chosen expert's products, in expert order
      const ExpertWeights& X = L.experts[size_t(e)];
      const size_t i = expert_inputs_.size();
      expert_outputs_.push_back({&X.gate, bias_or_null(X.b_gate), ffn_gate_.data() + i * F});
      expert_outputs_.push_back({&X.up, bias_or_null(X.b_up), ffn_up_.data() + i * F});
      expert_inputs_.push_back({ffn_gate_.data() + i * F, &X.down, bias_or_null(X.b_down), moe_y_.data() + i * H});
    }
  const int chosen = int(expert_inputs_.size());
  const bool shared = L.has_shared_expert();
  if (shared) {  // the shared expert's products join the same two forks
    const int S = c.shared_expert_ffn;
    grow(shared_gate_, size_t(S));
    grow(shared_up_, size_t(S));
    grow(shared_y_, size_t(H));
    expert_outputs_.push_back({&L.shared_expert.gate, nullptr, shared_gate_.data()});
    expert_outputs_.push_back({&L.shared_expert.up, nullptr, shared_up_.data()});
    expert_inputs_.push_back({shared_gate_.data(), &L.shared_expert.down, nullptr, shared_y_.data()});
  }
  cpu::linear_shared_input(h_.data(), 1, expert_outputs_);
  gated_activation(ffn_gate_.data(), ffn_up_.data(), int64_t(chosen) * F);
  if (shared) gated_activation(shared_gate_.data(), shared_up_.data(), c.shared_expert_ffn);
  cpu::linear_each(1, expert_inputs_);
  {
    const cpu::ProfileScope profile(cpu::Op::Elementwise);
    for (int e = 0, i = 0; e < c.num_experts; ++e)
      if (routing_.count(e) > 0) cpu::axpy(routing_.begin(e)->weight, moe_y_.data() + size_t(i++) * H, moe_out_.data(), H);
  }
  if (shared) add_shared_outputs(L, 1);
  std::memcpy(h_.data(), moe_out_.data(), sizeof(float) * H);
  experts_computed += uint64_t(chosen);
}

// A batch's shared expert: every row runs it, so its products take all the rows at once (each row the bits a one-row
// product gives: the decode step above computes the same row alike).
void CpuContext::add_shared_expert(const LayerWeights& L, int rows) {
  const int S = model_->config().shared_expert_ffn, H = model_->config().hidden_size;
  grow(shared_gate_, size_t(rows) * S);
  grow(shared_up_, size_t(rows) * S);
  grow(shared_y_, size_t(rows) * H);
  const cpu::LinearOutput products[] = {{&L.shared_expert.gate, nullptr, shared_gate_.data()},
                                        {&L.shared_expert.up, nullptr, shared_up_.data()}};
  cpu::linear_shared_input(h_.data(), rows, products);
  gated_activation(shared_gate_.data(), shared_up_.data(), int64_t(rows) * S);
  cpu::linear(shared_gate_.data(), rows, L.shared_expert.down, nullptr, shared_y_.data());
  add_shared_outputs(L, rows);
}

// moe_out_ += sigmoid(gate . x) * shared output, row by row, after the routed experts' sum (transformers' order); the
// gate's dot product is each row's own, so a row gets the same scale alone or in a batch. DeepSeek's shared experts
// have no gate: their output is added as it is.
void CpuContext::add_shared_outputs(const LayerWeights& L, int rows) {
  const int H = model_->config().hidden_size;
  const cpu::ProfileScope profile(cpu::Op::Elementwise);
  for (int r = 0; r < rows; ++r) {
    float* out = moe_out_.data() + size_t(r) * H;
    const float* y = shared_y_.data() + size_t(r) * H;
    if (L.shared_expert_gate.empty()) {
      cpu::add(y, out, H);
      continue;
    }
    const float logit = cpu::dot(L.shared_expert_gate.data(), h_.data() + size_t(r) * H, H);
    cpu::axpy(1.f / (1.f + std::exp(-logit)), y, out, H);
  }
}

}  // namespace specscope
