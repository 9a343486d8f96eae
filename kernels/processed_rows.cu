// Sampled verification's read of a row, on the GPU (llama_kernels.h, "kernels/processed_rows.cu"): the row's
// processed distribution, as engine/sampling/sampler.h's process_logits makes it (temperature, then top-k, top-p,
// min-p), made where the logits are, so that only the kept tokens cross instead of the vocabulary (half a megabyte a
// row at Llama 3's 128,256 tokens, and 3 ms of the host's time to order it). The CPU reference is
// processed_rows_ref.cpp (process_logits itself).
//
// One block per row. The order is top_k.cpp's (larger logit first, ties to the lower id) on the same order-preserving
// key. No full sort: a histogram of the keys' top 11 bits (and of the tempered softmax's mass per bucket) bounds the
// tokens any of the filters can keep, those candidates (at most kProcessedRowCap) are bitonic-sorted in shared memory
// on (key, id), and one thread then does process_logits's sequential arithmetic over them, in its order and in double,
// with the mass of the tokens outside the bound added as one sum. A row whose kept set the bound cannot bring under the
// cap (temperature alone over a large vocabulary, a top-p that keeps thousands) answers count = -1: the host then
// copies it whole and processes it itself.
#include <cfloat>
#include <cmath>

#include "kernels/cuda_check.h"
#include "kernels/device_common.cuh"
#include "kernels/llama_kernels.h"

namespace specscope::cuda {

namespace {

constexpr int kThreads = 1024;
constexpr int kBucketBits = 11, kBuckets = 1 << kBucketBits, kBucketShift = 32 - kBucketBits;
static_assert(kProcessedRowCap == kBuckets, "the candidates' weights reuse the per-bucket mass array");
// How far past top_p's mass the bound reaches, so that the sums' rounding (host and device add in other orders) never
// leaves a kept token outside it; tokens past the exact cut inside the bound are cut by the sequential pass.
constexpr double kMassSlack = 1e-6;

// top_k.cpp's descending_key: ascending keys are descending values, -0 ties +0, NaN after every number.
__device__ uint32_t descending_key(float x) {
  uint32_t u = __float_as_uint(x);
  if ((u & 0x7fffffffu) == 0) u = 0;
  const uint32_t flip = uint32_t(int32_t(u) >> 31) | 0x80000000u;
  const uint32_t key = ~(u ^ flip);
  return (u & 0x7fffffffu) > 0x7f800000u ? 0xffffffffu : key;
}

__device__ double block_sum(double v) {
  __shared__ double partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0;
  if (warp == 0)
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x == 0) partial[0] = v;
  __syncthreads();
  v = partial[0];
  __syncthreads();
  return v;
}

__global__ void __launch_bounds__(kThreads)
    process_row_k(const float* x, int V, float temperature, int top_k, float top_p, float min_p, ProcessedRow* out) {
  __shared__ int count[kBuckets];
  __shared__ double mass[kBuckets];  // per bucket, then the candidates' weights
  __shared__ unsigned long long cand[kProcessedRowCap];
  __shared__ int n_cand, bound, give_up;
  const int tid = threadIdx.x;
  const bool use_top_k = top_k > 0 && top_k < V;
  const double inv_t = 1.0 / double(temperature);

  // The largest logit (NaN ignored, as the order ranks NaN last).
  float m = -INFINITY;  // stays -inf for an all -inf or all-NaN row, which the test below then catches
  for (int j = tid; j < V; j += kThreads) m = fmaxf(m, x[j]);
  m = block_reduce<true>(m);
  if (!isfinite(m)) {  // an infinite or all-NaN row: the host's arithmetic, whatever it makes of it
    if (tid == 0) out->count = -1;
    return;
  }
  const double mx = double(m) * inv_t;
  for (int b = tid; b < kBuckets; b += kThreads) count[b] = 0, mass[b] = 0.0;
  if (tid == 0) n_cand = 0, give_up = 0;
  __syncthreads();

  // Histograms: tokens and (without top-k, whose sum is over its own set) tempered mass per bucket.
  double s = 0;
  for (int j = tid; j < V; j += kThreads) {
    const int b = int(descending_key(x[j]) >> kBucketShift);
    atomicAdd(&count[b], 1);
    if (!use_top_k) {
      const double w = exp(double(x[j]) * inv_t - mx);
      atomicAdd(&mass[b], w);
      s += w;
    }
  }
  const double total_mass = use_top_k ? 0.0 : block_sum(s);  // (syncs the histograms too)
  __syncthreads();
  if (!use_top_k && !isfinite(total_mass)) {  // NaN logits: the host's arithmetic, whatever it makes of them
    if (tid == 0) out->count = -1;
    return;
  }

  // The last bucket any filter can keep a token from.
  if (tid == 0) {
    int b = kBuckets - 1;
    if (use_top_k) {  // the bucket holding the k-th (ties share its key, so all of them are in it)
      int c = 0;
      for (b = 0; b < kBuckets - 1 && c + count[b] < top_k; ++b) c += count[b];
    } else if (top_p < 1.f) {  // a kept token's predecessors hold less than top_p of the mass
      const double reach = fmin(double(top_p) + kMassSlack, 1.0) * total_mass;
      double c = 0;
      for (b = 0; b < kBuckets - 1 && c + mass[b] < reach; ++b) c += mass[b];
    }
    int c = 0;
    for (int i = 0; i <= b; ++i) c += count[i];
    bound = b;
    if (c > kProcessedRowCap && (use_top_k || min_p <= 0.f)) give_up = 1;  // (min-p may cut them down)
  }
  __syncthreads();
  if (give_up) {
    if (tid == 0) out->count = -1;
    return;
  }

  // The candidates: within the bound and, with min-p (and no top-k), at least min_p of the top token's weight (1): a
  // prefix of the order, since the weights fall along it. The mass of everything else, as one sum.
  const bool min_p_filters = !use_top_k && min_p > 0.f;
  const double min_w = double(min_p) * (1.0 - kMassSlack);
  double rest = 0;
  for (int j = tid; j < V; j += kThreads) {
    const uint32_t key = descending_key(x[j]);
    bool in = int(key >> kBucketShift) <= bound;
    double w = 0;
    if (!use_top_k) {
      w = exp(double(x[j]) * inv_t - mx);
      if (min_p_filters) in = in && w >= min_w;
    }
    if (in) {
      const int slot = atomicAdd(&n_cand, 1);
      if (slot < kProcessedRowCap) cand[slot] = (static_cast<unsigned long long>(key) << 32) | unsigned(j);
    } else {
      rest += w;
    }
  }
  rest = block_sum(rest);  // (syncs the candidates too)
  const int nc = n_cand;
  if (nc > kProcessedRowCap || nc == 0) {
    if (tid == 0) out->count = -1;
    return;
  }

  // Bitonic sort of the candidates on (key, id), padded to a power of two with keys past every real one.
  int P = 1;
  while (P < nc) P *= 2;
  for (int i = nc + tid; i < P; i += kThreads) cand[i] = ~0ull;
  __syncthreads();
  for (int k = 2; k <= P; k *= 2)
    for (int j = k / 2; j > 0; j /= 2) {
      for (int i = tid; i < P; i += kThreads) {
        const int o = i ^ j;
        if (o > i) {
          const unsigned long long a = cand[i], c = cand[o];
          if ((a > c) == ((i & k) == 0)) cand[i] = c, cand[o] = a;
        }
      }
      __syncthreads();
    }

  // The candidates' weights, in order (into mass[], done with).
  double* w = mass;
  for (int i = tid; i < nc; i += kThreads) w[i] = exp(double(x[unsigned(cand[i])]) * inv_t - mx);
  __syncthreads();

  // process_logits's sequential arithmetic over its order, from here on one thread.
  if (tid != 0) return;
  auto id = [&](int i) { return int(unsigned(cand[i])); };
  int keep = nc;
  if (use_top_k) {
    keep = top_k;
    const float kth = x[id(keep - 1)];
    while (keep < nc && x[id(keep)] == kth) ++keep;
  }
  double sum = 0;
  for (int i = 0; i < keep; ++i) sum += w[i];
  if (!use_top_k) sum += rest;  // the tokens past the candidates, after them in the order
  for (int i = 0; i < keep; ++i) w[i] /= sum;
  bool beyond = !use_top_k && rest > 0;  // whether the host's keep still includes tokens past the candidates
  if (top_p < 1.f) {
    double cum_from_low = use_top_k ? 0.0 : rest / sum;
    if (cum_from_low <= 1.0 - double(top_p)) {
      int cut = keep;
      for (int i = keep - 1; i >= 1; --i) {
        cum_from_low += w[i];
        if (cum_from_low <= 1.0 - double(top_p)) cut = i;
        else break;
      }
      keep = cut;
      beyond = false;
    } else if (min_p <= 0.f) {  // top-p's cut lies past the candidates: the bound was too tight
      out->count = -1;
      return;
    }  // (else min-p, whose candidates these are, cuts within them)
  }
  if (min_p > 0.f) {
    const double thr = double(min_p) * w[0];
    int cut = 1;
    while (cut < keep && w[cut] >= thr) ++cut;
    keep = cut;
    beyond = false;  // every token past the candidates is below min_p of the top one by construction
  }
  if (beyond) {  // temperature alone, and the vocabulary is more than the candidates
    out->count = -1;
    return;
  }
  double kept = 0;
  for (int i = 0; i < keep; ++i) kept += w[i];
  for (int i = 0; i < keep; ++i) {
    out->ids[i] = id(i);
    out->probs[i] = float(w[i] / kept);
  }
  out->count = keep;
}

}  // namespace

void process_row(const float* logits, int vocab, float temperature, int top_k, float top_p, float min_p,
                 ProcessedRow* out, cudaStream_t stream) {
  process_row_k<<<1, kThreads, 0, stream>>>(logits, vocab, temperature, top_k, top_p, min_p, out);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace specscope::cuda
