// libFuzzer target: parse_safetensors on arbitrary bytes must either return views inside the buffer or throw
// InputError; never crash, hang or read out of bounds. Seed corpus: fuzz/corpus/safetensors.
#include <cstdint>
#include <map>
#include <string>

#include "engine/formats/safetensors.h"
#include "engine/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    std::map<std::string, std::string> metadata;
    auto tensors = specscope::parse_safetensors(data, size, "fuzz", &metadata);
    volatile uint8_t sink = 0;
    for (auto& [name, t] : tensors) {
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
