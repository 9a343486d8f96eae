#include "engine/model/mla_weights.h"

#include <cstdint>

#include "engine/util/error.h"
#include "engine/util/huge_page_arena.h"

namespace specscope {
namespace {

template <class T>
void transpose_nope_rows(const void* from, void* to, int heads, int64_t nope, int64_t vd, int64_t R) {
  const T* src = static_cast<const T*>(from);
  T* dst = static_cast<T*>(to);
  for (int h = 0; h < heads; ++h) {
    const T* s = src + int64_t(h) * (nope + vd) * R;  // head h's nope rows [nope][R]
    T* d = dst + int64_t(h) * R * nope;               // its k_b [R][nope]
    for (int64_t n = 0; n < nope; ++n)
      for (int64_t r = 0; r < R; ++r) d[r * nope + n] = s[n * R + r];
  }
}

}  // namespace

void bind_kv_b(const TensorView& kv_b, const ModelConfig& c, LayerWeights& L, const std::string& file) {
  const int heads = c.num_heads;
  const int64_t nope = c.nope_dim(), vd = c.value_dim(), R = c.kv_lora_rank;
  const size_t es = dtype_size(kv_b.dtype);
  if (dtype_is_block(kv_b.dtype) || (es != 2 && es != 4))
    throw InputError(file, "tensor '" + kv_b.name + "' has dtype " + std::string(dtype_name(kv_b.dtype)) +
                               " (a whole kv_b must be f32, f16 or bf16; GGUF files converted by llama.cpp since "
                               "2025 hold it split as attn_k_b and attn_v_b)");
  auto buf = huge_page_alloc(size_t(heads) * size_t(R * nope) * es);
  if (es == 2) transpose_nope_rows<uint16_t>(kv_b.data, buf.get(), heads, nope, vd, R);
  else transpose_nope_rows<uint32_t>(kv_b.data, buf.get(), heads, nope, vd, R);
  TensorView k_b;
  k_b.name = kv_b.name + "[k_b]";
  k_b.dtype = kv_b.dtype;
  k_b.shape = {int64_t(heads) * R, nope};
  k_b.data = buf.get();
  k_b.keep_alive = std::move(buf);
  k_b.loader_copy_in_huge_pages = true;
  L.k_b.clear();
  L.v_b.clear();
  for (int h = 0; h < heads; ++h) {
    const std::string part = "[" + std::to_string(h) + "]";
    L.k_b.push_back(k_b.rows_view(int64_t(h) * R, R, part));
    L.v_b.push_back(kv_b.rows_view(int64_t(h) * (nope + vd) + nope, vd, "[v_b]" + part));
  }
}

}  // namespace specscope
