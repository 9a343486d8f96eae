#include "runs/step_profile.h"

#include <algorithm>
#include <chrono>

#include "engine/cpu/matmul.h"
#include "engine/cpu/thread_pool.h"
#include "engine/util/median.h"
#include "runs/step_cost.h"

namespace specscope::runs {

size_t forward_weight_bytes(const Model& model) {
  size_t bytes = 0;
  for_each_linear(model.weights(), [&](const TensorView& t) { bytes += t.nbytes(); });
  // A mixture-of-experts layer's token reads experts_per_token of its routed experts (all of the same size), not all
  // (and the shared expert, which for_each_linear counted).
  const auto& c = model.config();
  for (const auto& L : model.weights().layers)
    if (!L.experts.empty()) {
      const auto& e = L.experts.front();
      const size_t expert = e.gate.nbytes() + e.up.nbytes() + e.down.nbytes();
      bytes -= expert * size_t(c.num_experts - c.experts_per_token);
    }
  return bytes;
}

std::string linear_path(const Model& model) {
  const auto& w = model.weights();
  const DType t = w.layers.empty() ? w.lm_head.dtype : w.layers.front().wq.dtype;
  return cpu::linear_roofline_path(t);
}

std::vector<StepProfile> profile_steps(const Model& model, const cpu::Roofline& roof, const std::vector<int>& sizes,
                                       int context, int repeat, cpu::WeightForm form) {
  // Every team thread, as the roofline it is compared with is measured: one slow join before the profile (this VM
  // delays a spinning member by 50-100 us now and then) put the fork/join back-off in force for 16 ms or more, longer
  // than a step size's few forwards, and `bench` then printed a one-thread profile (0 forks, the one-token step at
  // 0.75 ms beside the 0.35 ms the same run had just measured for it). Restored, with its account cleared, at the end.
  const cpu::BackoffOffScope backoff_off;
  auto ctx = model.new_cpu_context(0, form);
  context = std::max(1, std::min(context, ctx->n_ctx() - *std::max_element(sizes.begin(), sizes.end()) - 1));
  const std::vector<int32_t> prompt = benchmark_tokens(model.config().vocab_size, context);
  ForwardOutput out;
  ctx->forward(Batch::causal(prompt), out);
  const cpu::PathPeak* lin = roof.peak(linear_path(model));
  const cpu::PathPeak* f32 = roof.peak("f32 fma");
  std::vector<StepProfile> result;
  for (int n : sizes) {
    StepProfile p;
    p.tokens = n;
    // Warmed up as the step-cost curve is (runs/step_cost.h: after the roofline's FMA bursts the CPU runs slower
    // for a few milliseconds), then each timed forward recorded on its own, so that each operation's figure is a
    // median over forwards, like the whole step's.
    Batch b;
    for (int i = 0; i < n; ++i) b.tokens.push_back(prompt[size_t(i) % prompt.size()]);
    warm_up(*ctx, b, context);
    std::vector<cpu::OpProfile::Table> tables;
    std::vector<double> ms, forks, join_wait, experts;
    const int expert_layers = model.config().expert_layers();
    for (int r = 1; r <= repeat; ++r) {
      cpu::OpProfile::Recording rec;
      const cpu::ThreadingStats before = cpu::threading_stats();
      const uint64_t experts_before = ctx->experts_computed;
      const auto t0 = std::chrono::steady_clock::now();
      ctx->forward(b, out);
      const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const cpu::ThreadingStats after = cpu::threading_stats();
      ctx->truncate(context);
      ms.push_back(t);
      forks.push_back(double(after.parallel_calls - before.parallel_calls));
      join_wait.push_back(1e-6 * double(after.join_wait_ns - before.join_wait_ns));
      if (expert_layers > 0) experts.push_back(ctx->experts_per_layer_since(experts_before, expert_layers));
      tables.push_back(rec.totals());
    }
    p.ms = median(ms);
    p.forks = median(forks);
    p.join_wait_ms = median(join_wait);
    if (!experts.empty()) p.experts_per_layer = median(experts);
    for (int i = 0; i < int(cpu::Op::kCount); ++i) {
      const cpu::Op op = cpu::Op(i);
      std::vector<double> op_ms;
      for (const auto& t : tables) op_ms.push_back(1e3 * t[size_t(i)].seconds);
      const cpu::OpTotals& t = tables.front()[size_t(i)];
      if (t.calls == 0) continue;
      OpCost c{std::string(cpu::op_name(op)), median(op_ms), t.macs, t.weight_bytes, 0, ""};
      const cpu::PathPeak* peak = (op == cpu::Op::Linear || op == cpu::Op::LmHead) ? lin : op == cpu::Op::Attention ? f32 : nullptr;
      if (peak && c.macs > 0) {
        const double mem = roof.read_bytes_per_second > 0 ? 1e3 * c.weight_bytes / roof.read_bytes_per_second : 0;
        const double compute = 1e3 * c.macs / peak->macs_per_second;
        c.bound_ms = std::max(mem, compute);
        c.bound_by = mem >= compute ? "memory" : "compute";
      }
      p.bound_ms += c.bound_ms;
      p.ops.push_back(c);
    }
    result.push_back(std::move(p));
  }
  return result;
}

}  // namespace specscope::runs
