// CPU references of kernels/elementwise.cu (kernel_refs.h): the engine's cpu::silu_mul, cpu::gelu_tanh_mul,
// cpu::soft_cap and cpu::add; the scale a loop (the CPU forward's own), the bias add cpu::add per row, and the row gather a copy per row.
#include <cstring>

#include "engine/cpu/ops.h"
#include "kernels/kernel_refs.h"

namespace specscope::cuda::ref {

void silu_mul(const float* gate, const float* up, float* out, int64_t n) { cpu::silu_mul(gate, up, out, n); }

void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n) { cpu::gelu_tanh_mul(gate, up, out, n); }

void scale(float* y, float factor, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= factor;
}

void soft_cap(float* y, float cap, int64_t n) { cpu::soft_cap(y, cap, n); }

void add(const float* x, float* y, int64_t n) { cpu::add(x, y, n); }

void add_bias(float* y, const float* bias, int rows, int cols, int bias_rows) {
  for (int r = 0; r < rows; ++r) cpu::add(bias + int64_t(r % bias_rows) * cols, y + int64_t(r) * cols, cols);
}

void gather_rows(const float* x, const int32_t* rows, int nr, int dim, float* out) {
  for (int r = 0; r < nr; ++r)
    std::memcpy(out + int64_t(r) * dim, x + int64_t(rows[r]) * dim, sizeof(float) * size_t(dim));
}

void split_qkv(const float* qkv, int rows, int q_dim, int kv_dim, float* q, float* k, float* v) {
  const size_t m = size_t(q_dim) + 2 * size_t(kv_dim);
  for (int r = 0; r < rows; ++r) {
    const float* row = qkv + r * m;
    std::memcpy(q + size_t(r) * q_dim, row, sizeof(float) * size_t(q_dim));
    std::memcpy(k + size_t(r) * kv_dim, row + q_dim, sizeof(float) * size_t(kv_dim));
    std::memcpy(v + size_t(r) * kv_dim, row + q_dim + kv_dim, sizeof(float) * size_t(kv_dim));
  }
}

}  // namespace specscope::cuda::ref
