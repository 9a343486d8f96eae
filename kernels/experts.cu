// Mixture-of-experts layers on the GPU (llama_kernels.h, "kernels/experts.cu"): the routing of each row, the chosen
// experts' products with the expert read from device memory (so a forward with experts still needs nothing from the
// host and can be captured as a CUDA graph), and each row's weighted sum with Qwen2-MoE's gated shared expert. The
// CPU references are experts_ref.cpp (the engine's ExpertRouting for the routing).
//
// Written for clarity first, in the forty-eighth session with no GPU to run them on: one thread routes a row, one warp
// computes an output of a product, each lane decoding whole runs of 32 block weights (quant_decode.h). Since the
// forty-ninth (not yet run either), a batch of rows groups its picks by expert first (group_expert_picks), so that an
// expert's row is read and decoded once for up to 8 of its picks rather than once for each: a 2k-token Qwen3-30B-A3B
// prefill read each layer's chosen experts once per pick, ~80 GB a layer in Q8_0. Each output is
// one warp's sum in a fixed order, so a row's bits do not depend on its batch: given the same inputs, a tree row and
// its decode route and multiply alike, as greedy losslessness on the GPU needs. The router's logits and the shared
// expert come from `linear()`, whose cuBLAS products are not batch-invariant (the dense layers' caveat; gemv.cu's
// are, under SPECSCOPE_CUDA_GEMV=1): there a one-ulp difference in a router logit can change a pick, so a greedy
// parting at a near tie on a mixture of experts may start in the router.
#include <stdexcept>
#include <string>

#include "engine/model/expert_choice.h"
#include "kernels/cuda_check.h"
#include "kernels/device_common.cuh"
#include "kernels/llama_kernels.h"
#include "kernels/quant_decode.h"

namespace specscope::cuda {

namespace {

// One thread a row: the softmax of its router logits (in place), the experts chosen by the CPU's rule
// (engine/model/expert_choice.h), then the picks ordered by expert index, the order in which the CPU adds each row's
// expert outputs.
__global__ void route_experts_k(float* logits, int rows, int experts, int k, bool normalize, int32_t* ids,
                                float* weights) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float* p = logits + int64_t(r) * experts;
  float mx = -FLT_MAX;
  for (int e = 0; e < experts; ++e) mx = fmaxf(mx, p[e]);
  float sum = 0.f;
  for (int e = 0; e < experts; ++e) sum += (p[e] = expf(p[e] - mx));
  const float inv = 1.f / sum;  // times the inverse, as the CPU's softmax scales
  for (int e = 0; e < experts; ++e) p[e] *= inv;
  int32_t* pick = ids + int64_t(r) * k;
  float* w = weights + int64_t(r) * k;
  choose_experts(p, experts, k, normalize, pick, w);
  for (int j = 1; j < k; ++j)  // insertion sort of (id, weight) by id: k is 2-8
    for (int i = j; i > 0 && pick[i - 1] > pick[i]; --i) {
      const int32_t id = pick[i];
      pick[i] = pick[i - 1], pick[i - 1] = id;
      const float wt = w[i];
      w[i] = w[i - 1], w[i - 1] = wt;
    }
}

constexpr int kProductThreads = 256, kProductWarps = kProductThreads / 32;

// One block: each expert's picks counted, the experts' first places in `order` and first groups (in expert order, by a
// scan of at most a few hundred experts in one thread), then each pick put at its expert's next place (an atomic
// cursor: the order within an expert varies from run to run, which no output depends on) and each expert's groups
// written. Every global write of the block is published by its barriers to the next kernel on the stream.
__global__ void group_expert_picks_k(const int32_t* ids, int picks, int experts, int bound, int32_t* order,
                                     ExpertGroup* groups) {
  extern __shared__ int counts[];
  int* first = counts + experts;
  int* first_group = first + experts;
  int* cursor = first_group + experts;
  for (int e = threadIdx.x; e < experts; e += blockDim.x) counts[e] = 0;
  for (int g = threadIdx.x; g < bound; g += blockDim.x) groups[g] = ExpertGroup{0, 0, 0};
  __syncthreads();
  for (int p = threadIdx.x; p < picks; p += blockDim.x) atomicAdd(&counts[ids[p]], 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    int at = 0, g = 0;
    for (int e = 0; e < experts; ++e) {
      first[e] = cursor[e] = at, first_group[e] = g;
      at += counts[e];
      g += (counts[e] + kExpertGroupPicks - 1) / kExpertGroupPicks;
    }
  }
  __syncthreads();
  for (int p = threadIdx.x; p < picks; p += blockDim.x) order[atomicAdd(&cursor[ids[p]], 1)] = p;
  for (int e = threadIdx.x; e < experts; e += blockDim.x)
    for (int i = 0, g = first_group[e]; i < counts[e]; i += kExpertGroupPicks, ++g)
      groups[g] = ExpertGroup{first[e] + i, min(kExpertGroupPicks, counts[e] - i), e};
}

// Block (g, y): outputs y * 8 .. y * 8 + 7 of every pick of group g (one expert's, up to kPicks = 8; with kPicks = 1
// there are no groups and g is pick g alone: product p = row p / k, pick p % k, in fewer registers for a decode), one warp an output: lane l sums, in order, input elements l,
// l + 32, ... of a 16- or 32-bit row, or the runs of 32 elements l, l + 32, ... of a GGUF block row (each run's scale
// decoded once: quant_decode.h's decode_run, bit for bit element()'s values), each run or element applied to every
// pick of the group, then the warp adds each pick's lanes by butterfly. A pick's sum is the same sequence of fmaf
// whichever group holds it, and whether picks are grouped at all: the same bits.
template <int kPicks>
__global__ void __launch_bounds__(kProductThreads)
    expert_products_k(const uint8_t* W, WType t, size_t expert_bytes, size_t row_bytes, int m, int cols,
                      const int32_t* ids, const int32_t* order, const ExpertGroup* groups, int k, const float* X,
                      int64_t x_row_stride, int64_t x_pick_stride, float* Y) {
  const int gi = int(blockIdx.x);  // a group's index, or a pick's
  const ExpertGroup g = kPicks == 1 ? ExpertGroup{gi, 1, ids[gi]} : groups[gi];
  const int lane = threadIdx.x % 32, o = blockIdx.y * kProductWarps + threadIdx.x / 32;
  if (g.count == 0 || o >= m) return;  // block-uniform, then warp-uniform
  int32_t pick[kPicks];
  const float* x[kPicks];
  float acc[kPicks];
#pragma unroll
  for (int q = 0; q < kPicks; ++q) {
    const int at = g.first + min(q, g.count - 1);
    pick[q] = kPicks == 1 ? at : order[at];
    x[q] = X + int64_t(pick[q] / k) * x_row_stride + int64_t(pick[q] % k) * x_pick_stride;
    acc[q] = 0.f;
  }
  const uint8_t* row = W + size_t(g.expert) * expert_bytes + size_t(o) * row_bytes;
  if (is_block(t)) {
    const quant_decode::Block b = block_of(t);
    float w[32];
    for (int run = lane; run < cols / 32; run += 32) {
      quant_decode::decode_run(row, b, run, w);
#pragma unroll
      for (int q = 0; q < kPicks; ++q)
        if (q < g.count) {
          const float* xr = x[q] + 32 * run;
#pragma unroll
          for (int j = 0; j < 32; ++j) acc[q] = fmaf(xr[j], w[j], acc[q]);
        }
    }
  } else {
    for (int i = lane; i < cols; i += 32) {
      const float wv = load_w(row, t, i);
#pragma unroll
      for (int q = 0; q < kPicks; ++q)
        if (q < g.count) acc[q] = fmaf(x[q][i], wv, acc[q]);
    }
  }
#pragma unroll
  for (int q = 0; q < kPicks; ++q)
    if (q < g.count) {  // warp-uniform
      float a = acc[q];
      for (int s = 16; s > 0; s /= 2) a += __shfl_xor_sync(0xffffffffu, a, s);
      if (lane == 0) Y[int64_t(pick[q]) * m + o] = a;
    }
}

// One block a row: sigmoid(gate . h_row), the dot product summed as block_reduce adds.
__global__ void shared_expert_scales_k(const float* gate, const float* h, int dim, float* scales) {
  const float* x = h + int64_t(blockIdx.x) * dim;
  float acc = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) acc = fmaf(gate[i], x[i], acc);
  acc = block_reduce<false>(acc);
  if (threadIdx.x == 0) scales[blockIdx.x] = 1.f / (1.f + expf(-acc));
}

__global__ void sum_expert_outputs_k(const float* outs, const float* weights, int rows, int k, int dim,
                                     const float* shared, const float* shared_scales, float* y) {
  const int64_t n = int64_t(rows) * dim;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / dim, d = i % dim;
    float acc = 0.f;
    for (int j = 0; j < k; ++j) acc = fmaf(weights[r * k + j], outs[(r * k + j) * dim + d], acc);
    if (shared) acc = fmaf(shared_scales[r], shared[i], acc);
    y[i] = acc;
  }
}

}  // namespace

void route_experts(float* logits, int rows, int experts, int k, bool normalize, int32_t* ids, float* weights,
                   cudaStream_t s) {
  if (rows <= 0) return;
  route_experts_k<<<(rows + 63) / 64, 64, 0, s>>>(logits, rows, experts, k, normalize, ids, weights);
  CUDA_CHECK(cudaGetLastError());
}

void group_expert_picks(const int32_t* ids, int picks, int experts, int32_t* order, ExpertGroup* groups,
                        cudaStream_t s) {
  if (picks <= 0) return;
  if (experts <= 0 || experts > kMaxGroupedExperts)
    throw std::invalid_argument("group_expert_picks(): " + std::to_string(experts) + " experts (1 to " +
                                std::to_string(kMaxGroupedExperts) + ")");
  const size_t shmem = sizeof(int) * 4 * size_t(experts);
  group_expert_picks_k<<<1, 1024, shmem, s>>>(ids, picks, experts, expert_groups_bound(picks, experts), order,
                                               groups);
  CUDA_CHECK(cudaGetLastError());
}

void expert_products(const void* W, WType t, int m, int cols, const int32_t* ids, int rows, int k, const float* X,
                     int64_t x_row_stride, int64_t x_pick_stride, float* Y, cudaStream_t s,
                     const ExpertGrouping* grouping) {
  if (rows <= 0 || m <= 0) return;
  const size_t rb = row_bytes(t, cols);
  // The groups (or picks) on x (up to 2^31 - 1 blocks), the outputs on y (65,535 at most: 524,280 outputs): with the
  // picks on y, a Qwen3-MoE prefill of 8,192 tokens (8 picks each) was over y's limit and failed to launch.
  const unsigned blocks = grouping ? unsigned(grouping->bound) : unsigned(rows) * unsigned(k);
  const dim3 grid(blocks, (m + kProductWarps - 1) / kProductWarps);
  const auto* w = static_cast<const uint8_t*>(W);
  if (grouping)
    expert_products_k<kExpertGroupPicks><<<grid, kProductThreads, 0, s>>>(
        w, t, size_t(m) * rb, rb, m, cols, ids, grouping->order, grouping->groups, k, X, x_row_stride, x_pick_stride, Y);
  else
    expert_products_k<1><<<grid, kProductThreads, 0, s>>>(w, t, size_t(m) * rb, rb, m, cols, ids, nullptr, nullptr, k,
                                                          X, x_row_stride, x_pick_stride, Y);
  CUDA_CHECK(cudaGetLastError());
}

void shared_expert_scales(const float* gate, const float* h, int rows, int dim, float* scales, cudaStream_t s) {
  if (rows <= 0) return;
  shared_expert_scales_k<<<rows, 256, 0, s>>>(gate, h, dim, scales);
  CUDA_CHECK(cudaGetLastError());
}

void sum_expert_outputs(const float* outs, const float* weights, int rows, int k, int dim, const float* shared,
                        const float* shared_scales, float* y, cudaStream_t s) {
  const int64_t n = int64_t(rows) * dim;
  if (n == 0) return;
  sum_expert_outputs_k<<<grid_for(n, 256), 256, 0, s>>>(outs, weights, rows, k, dim, shared, shared_scales, y);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace specscope::cuda
