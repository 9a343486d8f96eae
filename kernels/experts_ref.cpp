// CPU references of kernels/experts.cu (kernel_refs.h): the routing is the engine's ExpertRouting (the CPU backend's
// own), read back per row in expert order; each expert product the definition, summed in double over the expert's
// rows widened by the engine (embed_gather's reference: cpu::embedding_row, any stored type); the shared expert's
// gate cpu::dot; the weighted sums a loop in the kernel's order.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/cpu/ops.h"
#include "engine/model/expert_routing.h"
#include "kernels/kernel_refs.h"

namespace specscope::cuda::ref {

void route_experts(float* logits, int rows, int experts, int k, bool normalize, int32_t* ids, float* weights) {
  ExpertRouting routing;
  routing.route(logits, rows, experts, k, normalize);
  std::vector<int> filled(size_t(rows), 0);
  for (int e = 0; e < experts; ++e)  // expert by expert: each row's picks come out in increasing expert order
    for (const ExpertRoute* r = routing.begin(e); r != routing.end(e); ++r) {
      const size_t at = size_t(r->row) * size_t(k) + size_t(filled[size_t(r->row)]++);
      ids[at] = e;
      weights[at] = r->weight;
    }
}

void group_expert_picks(const int32_t* ids, int picks, int experts, int32_t* order, ExpertGroup* groups) {
  const int bound = expert_groups_bound(picks, experts);
  int at = 0, g = 0;
  for (int e = 0; e < experts; ++e) {
    const int first = at;
    for (int p = 0; p < picks; ++p)
      if (ids[p] == e) order[at++] = p;
    for (int i = first; i < at; i += kExpertGroupPicks)
      groups[g++] = ExpertGroup{i, std::min(kExpertGroupPicks, at - i), e};
  }
  for (; g < bound; ++g) groups[g] = ExpertGroup{0, 0, 0};
}

void expert_products(const void* W, WType t, int m, int cols, const int32_t* ids, int rows, int k, const float* X,
                     int64_t x_row_stride, int64_t x_pick_stride, float* Y) {
  std::vector<int32_t> all_rows(static_cast<size_t>(m));
  std::iota(all_rows.begin(), all_rows.end(), 0);
  std::vector<float> w(size_t(m) * size_t(cols));
  for (int p = 0; p < rows * k; ++p) {
    const auto* expert = static_cast<const char*>(W) + size_t(ids[p]) * size_t(m) * row_bytes(t, cols);
    embed_gather(expert, t, all_rows.data(), m, cols, w.data());
    const float* x = X + int64_t(p / k) * x_row_stride + int64_t(p % k) * x_pick_stride;
    for (int o = 0; o < m; ++o) {
      double acc = 0;
      for (int i = 0; i < cols; ++i) acc += double(w[size_t(o) * cols + i]) * x[i];
      Y[int64_t(p) * m + o] = float(acc);
    }
  }
}

void shared_expert_scales(const float* gate, const float* h, int rows, int dim, float* scales) {
  for (int r = 0; r < rows; ++r) scales[r] = 1.f / (1.f + std::exp(-cpu::dot(gate, h + int64_t(r) * dim, dim)));
}

void sum_expert_outputs(const float* outs, const float* weights, int rows, int k, int dim, const float* shared,
                        const float* shared_scales, float* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t d = 0; d < dim; ++d) {
      float acc = 0.f;
      for (int j = 0; j < k; ++j) acc = std::fma(weights[r * k + j], outs[(r * k + j) * dim + d], acc);
      if (shared) acc = std::fma(shared_scales[r], shared[r * dim + d], acc);
      y[r * dim + d] = acc;
    }
}

}  // namespace specscope::cuda::ref
