#pragma once
// What the tensor-file fuzz targets check of every view a parser returns: its bytes lie inside the input. Each
// view is read (every 61st byte and its last), so ASan reports a view that reaches outside even if the bounds
// check below were wrong; a view that does is a trap.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "engine/util/tensor.h"

namespace specscope::fuzz {

inline void read_every_view(const std::map<std::string, TensorView>& tensors, const uint8_t* data, size_t size) {
  volatile uint8_t sink = 0;
  for (const auto& [name, t] : tensors) {
    const auto* p = static_cast<const uint8_t*>(t.data);
    const size_t n = t.nbytes();
    if (n && (p < data || p + n > data + size)) __builtin_trap();
    for (size_t i = 0; i < n; i += 61) sink = sink + p[i];
    if (n) sink = sink + p[n - 1];
  }
}

}  // namespace specscope::fuzz
