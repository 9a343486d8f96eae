#pragma once
// Multi-head attention of a batch of query rows against a KV cache, with grouped KV heads (GQA), on the engine's
// thread team. The forward's one attention kernel on CPU (engine/model/cpu_context.cpp).
//
// Layout: keys are kept transposed per KV head in tiles of 16 keys, element d of key j at kt_index(kvh, d, j) (each
// tile [head_dim][16] contiguous), so the scores of 16 consecutive keys are one vector FMA chain over d with no
// horizontal sums, streaming one 4 KB tile (head_dim 64), and every query head of a group reuses each loaded key
// vector. Values stay row-major, v[j * v_stride + kvh * head_dim + d].
//
// Results are bit-identical whatever else shares the batch or the cache (greedy losslessness rests on it): a score
// is one sequential FMA chain over d; the softmax sums the visible keys' weights in their order, packed (masked
// keys in between change nothing), and the output adds the visible values in key order.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace specscope::cpu {

// Which keys each row sees, packed: row r sees keys [0, prefix[r]) (the cache before a step: every row sees it) and
// then the keys listed in its tail, in key order. The same for every layer of a forward, so the caller packs it once
// per forward (and again after pruning rows) rather than attention() once per layer.
struct VisibleKeys {
  std::vector<int> prefix, count;  // per row: the all-visible prefix, and how many keys it sees in all
  std::vector<int> tail;           // per row, at r * keys: its visible keys from prefix[r] on
  int keys = 0;
  // From visible [rows][keys] (nonzero: seen).
  void build(const uint8_t* visible, int rows, int keys);
  // Key of packed position i (>= prefix) of row r.
  const int* tail_of(int r) const { return tail.data() + size_t(r) * size_t(keys); }
};

struct AttentionArgs {
  const float* q = nullptr;  // [rows][heads * head_dim] at q_stride
  size_t q_stride = 0;
  int rows = 0, heads = 0, kv_heads = 0, head_dim = 0;
  const float* kt = nullptr;  // transposed keys (above); kt_stride: key capacity, a multiple of 16 >= keys
  size_t kt_stride = 0;
  const float* v = nullptr;  // values (above), v_dim wide a head
  size_t v_stride = 0;
  // Each head's value and output width: 0, head_dim. MLA (DeepSeek) scores over the latent and the rotary key (576)
  // and sums only the latent (512).
  int v_dim = 0;
  int keys = 0;  // keys 0 .. keys-1 exist
  // visible(row, j): whether row may attend to key j. Called once per (row, key) from the calling thread.
  const uint8_t* visible = nullptr;  // [rows][keys]
  const VisibleKeys* seen = nullptr;  // `visible` packed (VisibleKeys::build); null: attention() packs it itself
  float scale = 1.f;
  float soft_cap = 0.f;  // > 0: scores (after scale) become soft_cap * tanh(score / soft_cap) (Gemma 2); 0: as they are
  // [heads]: head h's sink logit, one more term exp(sink - max) in its softmax's denominator, with no value (GPT-OSS);
  // null: none.
  const float* sinks = nullptr;
  float* out = nullptr;  // [rows][heads * v_dim] at out_stride
  size_t out_stride = 0;
};

void attention(const AttentionArgs& a);

// Keys padded for the transposed layout: the capacity kt needs for `keys` keys.
inline size_t kt_stride_for(int keys) { return (size_t(keys) + 15) / 16 * 16; }
// Where element d of key j of KV head kvh lives in kt (tiles of 16 keys x head_dim, one after another per head).
inline size_t kt_index(int kvh, int d, int j, int head_dim, size_t kt_stride) {
  return ((size_t(kvh) * (kt_stride / 16) + size_t(j / 16)) * size_t(head_dim) + size_t(d)) * 16 + size_t(j % 16);
}

}  // namespace specscope::cpu
