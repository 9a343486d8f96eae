// Greedy verification's reads of the logits, on the GPU (llama_kernels.h, "kernels/sampling.cu"): each logit row
// summarized where it was computed, so that a step sends the host a few dozen bytes per row instead of the
// vocabulary. One block per row: the argmax, the softmax's normalizer, the top kSummaryTopK (one block-wide
// selection per bar, each pass over the row skipping what earlier passes took) and the probes' probabilities.
// The CPU reference is sampling_ref.cpp (engine/sampling/logit_summary.h's summarize_logits).
#include <algorithm>
#include <cmath>

#include "engine/util/exp_zero.h"
#include "kernels/cuda_check.h"
#include "kernels/device_common.cuh"
#include "kernels/llama_kernels.h"

namespace specscope::cuda {

namespace {

constexpr int kSummaryThreads = 256;

// exp(d) as the engine computes a softmax's terms: exactly 0 where the CPU's exp is (engine/util/exp_zero.h), so a
// bar or a probe the host shows as 0 is 0 here too.
__device__ __forceinline__ float softmax_term(float d) { return d < kExpZeroBelow ? 0.f : expf(d); }

// The selection order of top_k_indices (engine/sampling/top_k.h): larger value first, equal values by lower id,
// NaN below every number. Whether (va, ia) comes before (vb, ib).
__device__ bool before(float va, int ia, float vb, int ib) {
  const bool na = isnan(va), nb = isnan(vb);
  if (na != nb) return nb;
  if (!na && va != vb) return va > vb;
  return ia < ib;
}

// The first in that order among the block's (v, i) pairs (i < 0: no candidate); every thread gets it.
__device__ void block_first(float& v, int& i) {
  __shared__ float pv[32];
  __shared__ int pi[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int o = 16; o > 0; o /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (oi >= 0 && (i < 0 || before(ov, oi, v, i))) v = ov, i = oi;
  }
  if (lane == 0) pv[warp] = v, pi[warp] = i;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / 32;
    v = lane < warps ? pv[lane] : 0.f;
    i = lane < warps ? pi[lane] : -1;
    for (int o = 16; o > 0; o /= 2) {
      const float ov = __shfl_xor_sync(0xffffffffu, v, o);
      const int oi = __shfl_xor_sync(0xffffffffu, i, o);
      if (oi >= 0 && (i < 0 || before(ov, oi, v, i))) v = ov, i = oi;
    }
    if (lane == 0) pv[0] = v, pi[0] = i;
  }
  __syncthreads();
  v = pv[0];
  i = pi[0];
  __syncthreads();  // pv / pi are reused by the next call
}

// A row whose every logit is -inf: the host's softmax gives all zeros (cpu::softmax), so the summary is the argmax at
// probability 0 with no bars, and every probe is 0. Every thread of the block calls it.
__device__ void write_minus_infinity_row(int best_id, int row, const int32_t* probe_start, LogitSummary* out,
                                         float* probe_probs) {
  LogitSummary zeros;
  zeros.argmax = best_id;
  zeros.argmax_prob = 0.f;
  if (threadIdx.x == 0) out[row] = zeros;
  if (probe_start)
    for (int j = probe_start[row] + threadIdx.x; j < probe_start[row + 1]; j += blockDim.x) probe_probs[j] = 0.f;
}

// From the row's argmax (best, best_id) and its softmax normalizer: the bars, the first kSummaryTopK in before()'s
// order from the argmax on, each the first after the previous among `n` candidates (cand(i, v, id) gives the i-th;
// id -1: none), then the probes' probabilities; thread 0 writes the summary. Every thread of the block calls it.
template <class Candidates>
__device__ void write_summary(float best, int best_id, float sum, int n, Candidates cand, const float* x, int row,
                              const int32_t* probe_start, const int32_t* probe_tokens, LogitSummary* out,
                              float* probe_probs) {
  LogitSummary summary;
  summary.argmax = best_id;
  summary.argmax_prob = 1.f / sum;
  float prev = best;
  int prev_id = best_id;
  for (int t = 0; t < kSummaryTopK && prev_id >= 0; ++t) {
    if (t > 0) {
      float v = 0.f;
      int id = -1;
      for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float cv;
        int ci;
        cand(i, cv, ci);
        if (ci >= 0 && before(prev, prev_id, cv, ci) && (id < 0 || before(cv, ci, v, id))) v = cv, id = ci;
      }
      block_first(v, id);
      prev = v;
      prev_id = id;
      if (id < 0) break;
    }
    const float p = softmax_term(prev - best) / sum;
    if (p > 0.f) {  // as the host's bars: underflowed tokens are not shown
      summary.top_ids[summary.top_count] = prev_id;
      summary.top_probs[summary.top_count] = p;
      ++summary.top_count;
    }
  }
  if (threadIdx.x == 0) out[row] = summary;
  if (probe_start)
    for (int j = probe_start[row] + threadIdx.x; j < probe_start[row + 1]; j += blockDim.x)
      probe_probs[j] = softmax_term(x[probe_tokens[j]] - best) / sum;
}

__global__ void logit_summaries_k(const float* logits, int vocab, const int32_t* probe_start,
                                  const int32_t* probe_tokens, LogitSummary* out, float* probe_probs) {
  const int row = blockIdx.x;
  const float* x = logits + int64_t(row) * vocab;
  // Pass 1: the argmax.
  float best = 0.f;
  int best_id = -1;
  for (int j = threadIdx.x; j < vocab; j += blockDim.x)
    if (best_id < 0 || before(x[j], j, best, best_id)) best = x[j], best_id = j;
  block_first(best, best_id);
  // The host's argmax (engine/sampling/sampler.cpp) starts at id 0 and moves only to a larger logit, so a NaN first
  // logit stays its answer where the order above ranks NaN last: take the host's answer (a row with NaN is refused
  // further on either way; this keeps the two backends' records the same up to there).
  if (isnan(x[0])) best = x[0], best_id = 0;
  if (best == -INFINITY) return write_minus_infinity_row(best_id, row, probe_start, out, probe_probs);  // all return
  // Pass 2: the softmax's normalizer, sum exp(x - max).
  float s = 0.f;
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) s += softmax_term(x[j] - best);
  const float sum = block_reduce<false>(s);
  // Passes 3..: the top bars, each the first in the order after the previous one, over the whole row.
  write_summary(best, best_id, sum, vocab, [x](int i, float& v, int& id) { v = x[i], id = i; }, x, row, probe_start,
                probe_tokens, out, probe_probs);
}

// The chunked path for long rows (llama_kernels.h's logit_summaries_chunked): one block per (row, chunk of
// kSummaryChunk logits) writes the chunk's part, then one block per row merges the parts into the row's summary.
// One block scanning a 128,256-entry row six times took 0.53 ms of an 8.4 ms Llama-3.1-8B decode step on the H200.
struct ChunkPart {
  float top[kSummaryTopK];  // the chunk's first kSummaryTopK in the order of before() (top[0]: its max)
  int32_t top_ids[kSummaryTopK];  // -1 past the chunk's end
  float sum;                // sum of softmax_term(x - top[0]) over the chunk; 0 when top[0] is -inf
};

// Launched with kSummaryThreads threads: each holds its kSummaryChunk / kSummaryThreads logits of the chunk in
// registers, read once for the six passes.
constexpr int kChunkPerThread = kSummaryChunk / kSummaryThreads;
static_assert(kChunkPerThread * kSummaryThreads == kSummaryChunk, "a chunk is a whole number of logits a thread");

__global__ void summary_chunks_k(const float* logits, int vocab, int chunks, ChunkPart* parts) {
  const int row = blockIdx.x, c = blockIdx.y;
  const float* x = logits + int64_t(row) * vocab;
  const int begin = c * kSummaryChunk, end = min(vocab, begin + kSummaryChunk);
  float xs[kChunkPerThread];
  int ids[kChunkPerThread];  // -1 past the row's end
  for (int k = 0; k < kChunkPerThread; ++k) {
    const int j = begin + threadIdx.x + k * kSummaryThreads;
    ids[k] = j < end ? j : -1;
    xs[k] = j < end ? x[j] : 0.f;
  }
  ChunkPart part;
  float prev = 0.f;
  int prev_id = -1;
  for (int t = 0; t < kSummaryTopK; ++t) {
    float v = 0.f;
    int id = -1;
    if (t == 0 || prev_id >= 0)
      for (int k = 0; k < kChunkPerThread; ++k)
        if (ids[k] >= 0 && (t == 0 || before(prev, prev_id, xs[k], ids[k])) && (id < 0 || before(xs[k], ids[k], v, id)))
          v = xs[k], id = ids[k];
    block_first(v, id);  // every thread calls it, whatever the chunk holds
    part.top[t] = v;
    part.top_ids[t] = id;
    prev = v;
    prev_id = id;
  }
  const float m = part.top[0];
  float s = 0.f;
  if (part.top_ids[0] >= 0 && m != -INFINITY)  // an all -inf chunk adds nothing (and exp(-inf - -inf) is NaN)
    for (int k = 0; k < kChunkPerThread; ++k)
      if (ids[k] >= 0) s += softmax_term(xs[k] - m);
  part.sum = block_reduce<false>(s);
  if (threadIdx.x == 0) parts[int64_t(row) * chunks + c] = part;
}

// One block per row: the chunks' parts into shared memory, then every selection and sum shared by the block's
// threads (a thread merging alone walked ~1,300 candidates one dependent load at a time).
__global__ void summary_merge_k(const float* logits, int vocab, int chunks, const ChunkPart* parts,
                                const int32_t* probe_start, const int32_t* probe_tokens, LogitSummary* out,
                                float* probe_probs) {
  extern __shared__ unsigned char part_bytes[];
  ChunkPart* sp = reinterpret_cast<ChunkPart*>(part_bytes);
  const int row = blockIdx.x;
  const float* x = logits + int64_t(row) * vocab;
  for (int c = threadIdx.x; c < chunks; c += blockDim.x) sp[c] = parts[int64_t(row) * chunks + c];
  __syncthreads();
  // The row's first in the order is the first of the chunks' firsts; the host keeps a NaN first logit (as in
  // logit_summaries_k above).
  float best = 0.f;
  int best_id = -1;
  for (int c = threadIdx.x; c < chunks; c += blockDim.x)
    if (sp[c].top_ids[0] >= 0 && (best_id < 0 || before(sp[c].top[0], sp[c].top_ids[0], best, best_id)))
      best = sp[c].top[0], best_id = sp[c].top_ids[0];
  block_first(best, best_id);
  if (isnan(x[0])) best = x[0], best_id = 0;
  if (best == -INFINITY) return write_minus_infinity_row(best_id, row, probe_start, out, probe_probs);  // all return
  // Each chunk's sum of exp(x - its max), moved to the row's max: exp(x - m_c) exp(m_c - best).
  float s = 0.f;
  for (int c = threadIdx.x; c < chunks; c += blockDim.x)
    if (sp[c].top_ids[0] >= 0 && sp[c].top[0] != -INFINITY) s += sp[c].sum * softmax_term(sp[c].top[0] - best);
  const float sum = block_reduce<false>(s);
  // The bars among the chunks' own first kSummaryTopK (a row's t-th is within the first t of its chunk).
  write_summary(best, best_id, sum, chunks * kSummaryTopK,
                [sp](int i, float& v, int& id) { v = sp[i / kSummaryTopK].top[i % kSummaryTopK],
                                                  id = sp[i / kSummaryTopK].top_ids[i % kSummaryTopK]; },
                x, row, probe_start, probe_tokens, out, probe_probs);
}

}  // namespace

void logit_summaries(const float* logits, int rows, int vocab, const int32_t* probe_start, const int32_t* probe_tokens,
                     LogitSummary* out, float* probe_probs, cudaStream_t stream) {
  if (rows <= 0) return;
  logit_summaries_k<<<rows, kSummaryThreads, 0, stream>>>(logits, vocab, probe_start, probe_tokens, out, probe_probs);
  CUDA_CHECK(cudaGetLastError());
}

namespace {
int summary_chunks(int vocab) { return (vocab + kSummaryChunk - 1) / kSummaryChunk; }
}  // namespace

size_t summary_scratch_bytes(int rows, int vocab) {
  return size_t(std::max(rows, 0)) * size_t(summary_chunks(vocab)) * sizeof(ChunkPart);
}

void logit_summaries_chunked(const float* logits, int rows, int vocab, const int32_t* probe_start,
                             const int32_t* probe_tokens, LogitSummary* out, float* probe_probs, void* scratch,
                             cudaStream_t stream) {
  if (rows <= 0) return;
  const int chunks = summary_chunks(vocab);
  auto* parts = static_cast<ChunkPart*>(scratch);
  summary_chunks_k<<<dim3(rows, chunks), kSummaryThreads, 0, stream>>>(logits, vocab, chunks, parts);
  CUDA_CHECK(cudaGetLastError());
  summary_merge_k<<<rows, 128, sizeof(ChunkPart) * size_t(chunks), stream>>>(logits, vocab, chunks, parts, probe_start,
                                                                            probe_tokens, out, probe_probs);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace specscope::cuda
