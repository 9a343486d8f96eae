// libFuzzer target: parse_safetensors on arbitrary bytes must either return views inside the buffer or throw
// InputError; never crash, hang or read out of bounds. Seed corpus: fuzz/corpus/safetensors.
#include <cstdint>
#include <map>
#include <string>

#include "engine/formats/safetensors.h"
#include "engine/util/error.h"
#include "fuzz/tensor_views_inside.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    std::map<std::string, std::string> metadata;
    auto tensors = specscope::parse_safetensors(data, size, "fuzz", &metadata);
    specscope::fuzz::read_every_view(tensors, data, size);
  } catch (const specscope::InputError&) {
  }
  return 0;
}
