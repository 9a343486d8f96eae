// libFuzzer target: parse_torch_checkpoint on arbitrary bytes must either return views inside the buffer or throw
// InputError; never crash, hang or read out of bounds. Seed corpus: fuzz/corpus/torch_checkpoint.
#include <cstdint>
#include <cstring>

#include "engine/formats/torch_checkpoint.h"
#include "engine/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto tensors = specscope::parse_torch_checkpoint(data, size, "fuzz");
    volatile uint8_t sink = 0;
    for (auto& [name, t] : tensors) {
      // Every byte of every view must lie inside the input (ASan checks the reads).
      const auto* p = static_cast<const uint8_t*>(t.data);
      size_t n = t.nbytes();
      if (n && (p < data || p + n > data + size)) __builtin_trap();
      for (size_t i = 0; i < n; i += 61) sink = sink + p[i];
      if (n) sink = sink + p[n - 1];
    }
  } catch (const specscope::InputError&) {
  }
  return 0;
}
