#pragma once
// A view of a stored tensor: type, shape and a pointer into a mapping (or an owned buffer) that outlives it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/util/dtype.h"

namespace specscope {

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  std::shared_ptr<const void> keep_alive;  // the mapping or buffer that owns `data`
  // A requantized copy the CPU kernels use instead of `data`, set by a context or head that was asked for one
  // (engine/cpu/weight_form.h): a cpu::Int8Panels when requantized_bits is 8, a cpu::Int4Panels when 4; null for
  // everything else.
  std::shared_ptr<const void> requantized;
  int8_t requantized_bits = 0;
  // Q4_K, Q5_K and Q6_K weights only: the same super-blocks with their codes reordered for the integer dot kernels
  // (engine/cpu/kquant_lanes.h), made with the CPU's copy of the weights (engine/model/resident_weights.h); null
  // otherwise. Only those kernels read it; everything else reads `data`.
  std::shared_ptr<const void> lanes;
  // `data` is a copy the loader made in huge pages (a Hugging Face GPT-OSS checkpoint's experts, repacked at load:
  // model.cpp), not a file mapping: the CPU's huge-page copy of the weights (resident_weights.h) leaves it where it is.
  bool loader_copy_in_huge_pages = false;

  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  size_t nbytes() const {  // block types: rows() rows of cols() elements
    return dtype_is_block(dtype) ? size_t(rows()) * dtype_row_bytes(dtype, cols()) : size_t(numel()) * dtype_size(dtype);
  }
  int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  int64_t cols() const { return shape.size() < 2 ? (shape.empty() ? 1 : shape[0]) : shape[1]; }
  std::string shape_str() const;
  // Element i converted to f32 (slow path, for loading small vectors and tests). Not for block types
  // (std::invalid_argument).
  float at(int64_t i) const;
  // Copies the whole tensor to f32 (for small tensors: norms, biases).
  std::vector<float> to_f32() const;
  // Rows [first, first + count) of a 2-D tensor as a view of the same memory, named name + part: the parts of a
  // fused matrix (Phi-3's qkv_proj and gate_up_proj). Only for a tensor as loaded (no requantized copy or lanes).
  TensorView rows_view(int64_t first, int64_t count, const std::string& part) const;
};

}  // namespace specscope
