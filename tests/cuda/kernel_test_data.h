#pragma once
// Inputs for the kernel tests (cuda_kernels_test.cpp on a GPU, kernel_refs_test.cpp on the CPU): seeded random
// activations and weights in every stored type, tree masks, RoPE frequencies, and the comparisons they report.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/util/dtype.h"
#include "kernels/quant_decode.h"
#include "kernels/wtype.h"

namespace specscope::kernel_test {

using cuda::WType;

// The model shapes the kernels are written for (issue 23).
struct Shape {
  const char* name;
  int hidden, heads, kv_heads, head_dim, ffn;
};
inline constexpr Shape kLlama1B{"Llama-3.2-1B", 2048, 32, 8, 64, 8192};
inline constexpr Shape kLlama8B{"Llama-3.1-8B", 4096, 32, 8, 128, 14336};
inline constexpr Shape kShapes[] = {kLlama1B, kLlama8B};

inline constexpr WType kAllTypes[] = {WType::F32,  WType::F16,  WType::BF16, WType::Q8_0, WType::Q4_0, WType::Q4_1,
                                      WType::Q5_0, WType::Q5_1, WType::Q4_K, WType::Q5_K, WType::Q6_K};
inline constexpr WType kBlockTypes[] = {WType::Q8_0, WType::Q4_0, WType::Q4_1, WType::Q5_0,
                                        WType::Q5_1, WType::Q4_K, WType::Q5_K, WType::Q6_K};

inline const char* type_name(WType t) {
  static const char* const names[] = {"F32",  "F16",  "BF16", "Q8_0", "Q4_0", "Q4_1",
                                      "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"};
  return names[int(t)];
}

inline std::vector<float> uniform(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// `rows` rows of `cols` weights stored as t. Block types get random bytes (every quant and sub-block scale
// pattern) with their f16 scales and mins drawn finite, since random bits there could be NaN or infinity.
inline std::vector<uint8_t> random_rows(WType t, int rows, int cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(row_bytes(t, cols) * size_t(rows));
  if (!cuda::is_block(t)) {
    const std::vector<float> f = uniform(size_t(rows) * cols, -2.f, 2.f, seed + 1);
    for (size_t i = 0; i < f.size(); ++i) {
      if (t == WType::F32) {
        std::memcpy(out.data() + 4 * i, &f[i], 4);
      } else {
        const uint16_t h = t == WType::F16 ? f32_to_f16(f[i]) : f32_to_bf16(f[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
    }
    return out;
  }
  for (auto& byte : out) byte = uint8_t(rng());
  const quant_decode::Block b = block_of(t);
  std::vector<int> halves = {0};  // d of Q8_0, Q4_0, Q5_0
  if (b == quant_decode::Block::Q4_1 || b == quant_decode::Block::Q5_1 || b == quant_decode::Block::Q4_K ||
      b == quant_decode::Block::Q5_K)
    halves = {0, 2};  // d and the min (dmin)
  if (b == quant_decode::Block::Q6_K) halves = {208};
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (size_t blk = 0; blk < out.size(); blk += size_t(quant_decode::block_bytes(b)))
    for (int off : halves) {
      const uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(out.data() + blk + size_t(off), &h, 2);
    }
  return out;
}

// A random tree of n nodes in topological order (node 0 the root): mask[i * n + j] = j is i or an ancestor of i,
// and each node's depth (its position offset from the root).
struct Tree {
  std::vector<int> parent;
  std::vector<uint8_t> mask;
  std::vector<int32_t> depth;
};
inline Tree random_tree(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  Tree t{std::vector<int>(size_t(n), -1), std::vector<uint8_t>(size_t(n) * n, 0), std::vector<int32_t>(size_t(n), 0)};
  for (int i = 0; i < n; ++i) {
    if (i > 0) t.parent[i] = int(rng() % uint32_t(i));
    if (i > 0) t.depth[i] = t.depth[t.parent[i]] + 1;
    for (int a = i; a >= 0; a = t.parent[a]) t.mask[size_t(i) * n + a] = 1;
  }
  return t;
}

// One attention call's inputs: queries of n new rows, a KV cache of base earlier slots (positions 0..base-1) and
// the n new ones, whose positions are base + their depth: a random tree under its mask, or a causal chain
// (mask empty: the launcher's nullptr).
struct AttentionCase {
  int n = 0, base = 0, nh = 0, nkv = 0, hd = 0, window = 0;
  float soft_cap = 0.f;                      // > 0: scores capped to soft_cap * tanh(score / soft_cap) (Gemma 2)
  std::vector<float> q, k, v;               // q [n, nh * hd]; k, v [base + n, nkv * hd]
  std::vector<int32_t> slot_pos, positions;  // [base + n], [n]
  std::vector<uint8_t> mask;                 // [n * n] or empty
  std::vector<int> parent;                   // each new row's parent among the new rows (-1: none)
};
inline AttentionCase attention_case(int nh, int nkv, int hd, int base, int n, bool tree, int window, uint32_t seed) {
  AttentionCase c;
  c.n = n, c.base = base, c.nh = nh, c.nkv = nkv, c.hd = hd, c.window = window;
  // Scores of a few units (q, k in [-3, 3]): a softmax that picks out some slots, not a flat average.
  c.q = uniform(size_t(n) * nh * hd, -3.f, 3.f, seed);
  c.k = uniform(size_t(base + n) * nkv * hd, -3.f, 3.f, seed + 1);
  c.v = uniform(size_t(base + n) * nkv * hd, -1.f, 1.f, seed + 2);
  std::vector<int32_t> depth(static_cast<size_t>(n));
  c.parent.assign(size_t(n), -1);
  if (tree) {
    Tree t = random_tree(n, seed + 3);
    c.mask = std::move(t.mask), c.parent = std::move(t.parent), depth = std::move(t.depth);
  } else {
    for (int i = 0; i < n; ++i) c.parent[i] = i - 1, depth[i] = i;
  }
  c.slot_pos.resize(size_t(base + n));
  for (int j = 0; j < base; ++j) c.slot_pos[j] = j;
  c.positions.resize(size_t(n));
  for (int i = 0; i < n; ++i) c.positions[i] = c.slot_pos[base + i] = base + depth[i];
  return c;
}

// Llama's RoPE frequencies, theta^(-2i/d) (Llama 3 uses theta = 500000).
inline std::vector<float> inv_freq(int head_dim, double theta = 500000.0) {
  std::vector<float> f(size_t(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) f[i] = float(1.0 / std::pow(theta, 2.0 * i / head_dim));
  return f;
}

// Logits for the summary kernel (kernels/sampling.cu): `rows` rows of a vocabulary, log-normal-ish spreads as an LM
// head gives (N(0, 3)), with what tests its order: row 0's largest value repeated at a higher id (ties go to the
// lower id), a row whose top logits are all equal, and per row `probes` random probe tokens (repeats allowed).
struct SummaryCase {
  int rows = 0, vocab = 0;
  std::vector<float> logits;
  std::vector<int32_t> probe_start, probe_tokens;
};
inline SummaryCase summary_case(int rows, int vocab, int probes, uint32_t seed) {
  SummaryCase c;
  c.rows = rows;
  c.vocab = vocab;
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 3.f);
  c.logits.resize(size_t(rows) * vocab);
  for (auto& x : c.logits) x = d(rng);
  if (rows > 0) {
    const auto top = std::max_element(c.logits.begin(), c.logits.begin() + vocab);
    c.logits[size_t(vocab - 1)] = *top;  // a tie for the argmax, at a higher id
  }
  if (rows > 1)
    for (int j : {7, 3, 11, 5, 9, 1}) c.logits[size_t(vocab) + size_t(j)] = 40.f;  // six equal tops
  std::uniform_int_distribution<int32_t> tok(0, vocab - 1);
  c.probe_start.push_back(0);
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < probes; ++j) c.probe_tokens.push_back(tok(rng));
    c.probe_start.push_back(int32_t(c.probe_tokens.size()));
  }
  return c;
}

// max |a - b| over max |b|: the error relative to the output's scale (as cuda_parity_test.cpp measures logits).
inline double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 1e-30, d = 0;
  for (size_t i = 0; i < b.size(); ++i) scale = std::max(scale, double(std::abs(b[i])));
  for (size_t i = 0; i < b.size(); ++i) d = std::max(d, double(std::abs(a[i] - b[i])));
  return d / scale;
}

// How many elements differ bit for bit (and the first), for the kernels that must match exactly.
struct BitDiff {
  size_t count = 0, first = 0;
};
template <class T>
BitDiff bit_diff(const std::vector<T>& a, const std::vector<T>& b) {
  BitDiff r;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0 && r.count++ == 0) r.first = i;
  return r;
}

}  // namespace specscope::kernel_test
