#pragma once
// Multi-head attention of a batch of query rows against a KV cache, with grouped KV heads (GQA), on the engine's
// thread team. The forward's one attention kernel on CPU (engine/model/cpu_context.cpp).
//
// Layout: keys are kept transposed per KV head, kt[(kvh * head_dim + d) * kt_stride + j] (key j's element d), so the
// scores of 16 consecutive keys are one vector FMA chain over d with no horizontal sums, and every query head of a
// group reuses each loaded key vector. Values stay row-major, v[j * v_stride + kvh * head_dim + d].
//
// Results are bit-identical whatever else shares the batch or the cache (greedy losslessness rests on it): a score
// is one sequential FMA chain over d; the softmax sums the visible keys' weights in their order, packed (masked
// keys in between change nothing), and the output adds the visible values in key order.
#include <cstddef>
#include <cstdint>

namespace specscope::cpu {

struct AttentionArgs {
  const float* q = nullptr;  // [rows][heads * head_dim] at q_stride
  size_t q_stride = 0;
  int rows = 0, heads = 0, kv_heads = 0, head_dim = 0;
  const float* kt = nullptr;  // transposed keys (above); kt_stride >= round_up(keys, 16)
  size_t kt_stride = 0;
  const float* v = nullptr;  // values (above)
  size_t v_stride = 0;
  int keys = 0;  // keys 0 .. keys-1 exist
  // visible(row, j): whether row may attend to key j. Called once per (row, key) from the calling thread.
  const uint8_t* visible = nullptr;  // [rows][keys]
  float scale = 1.f;
  float* out = nullptr;  // [rows][heads * head_dim] at out_stride
  size_t out_stride = 0;
};

void attention(const AttentionArgs& a);

// Keys padded for the transposed layout: the row stride kt needs for `keys` keys.
inline size_t kt_stride_for(int keys) { return (size_t(keys) + 15) / 16 * 16; }

}  // namespace specscope::cpu
