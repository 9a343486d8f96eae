#pragma once
// Element-wise and row-wise CPU kernels of the decoder (everything except the matrix products, which live in
// matmul.h). Each has the straightforward semantics of its PyTorch counterpart in transformers' Llama code.
#include <cstdint>

namespace specscope::cpu {

// y = x / sqrt(mean(x^2) + eps) * w, for `rows` rows of length `dim` (in place allowed).
void rmsnorm(const float* x, const float* w, float* y, int rows, int dim, float eps);
// Rotates pairs (i, i + head_dim/2) of every head of one token by angle pos * inv_freq[i] (HF rotate_half); with
// rotary_dim (0: head_dim) and scale, as rope_rotate and rope_angles below take them.
void rope(float* vec, int n_heads, int head_dim, int32_t pos, const float* inv_freq, int rotary_dim = 0,
          float scale = 1.f);
// The same in two parts, for callers that keep the angles of a position (cpu::RopeTable): cos_sin[0, half) the
// cosines and cos_sin[half, 2 half) the sines of pos * inv_freq[i], computed exactly as rope() computes them, each
// then times `scale` (LongRoPE's attention factor, as transformers scales its cos and sin).
void rope_angles(int32_t pos, const float* inv_freq, int half, float* cos_sin, float scale = 1.f);
// Rotates pairs (i, i + rotary_dim/2) of each head's first rotary_dim dimensions; the others pass through (Phi's
// partial rotary). rotary_dim 0: head_dim.
void rope_rotate(float* vec, int n_heads, int head_dim, const float* cos_sin, int rotary_dim = 0);
// out[i] = silu(gate[i]) * up[i]
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
// out[i] = gelu_tanh(gate[i]) * up[i], PyTorch's gelu(approximate="tanh") (Gemma's gelu_pytorch_tanh)
void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n);
// GPT-OSS's clamped SwiGLU: out[i] = g * sigmoid(alpha * g) * (u + 1), g = min(gate[i], limit),
// u = clamp(up[i], -limit, limit)
void swiglu_clamped_mul(const float* gate, const float* up, float* out, int64_t n, float limit, float alpha);
// In-place softmax over n values; returns nothing. Handles -inf entries.
void softmax(float* x, int n);
// In-place log-softmax over n values (a drafter's log-probabilities).
void log_softmax(float* x, int n);
float dot(const float* a, const float* b, int n);  // in 16 lanes, one fixed horizontal sum
void axpy(float a, const float* x, float* y, int64_t n);  // y += a * x
void add(const float* x, float* y, int64_t n);            // y += x
void divide(float* x, float d, int64_t n);  // x /= d (Granite's logits / logits_scaling)
void soft_cap(float* x, float cap, int64_t n);  // x = cap * tanh(x / cap) (Gemma 2's final logits)

}  // namespace specscope::cpu
