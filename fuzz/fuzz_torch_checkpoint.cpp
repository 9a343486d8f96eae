// libFuzzer target: parse_torch_checkpoint on arbitrary bytes must either return views inside the buffer or throw
// InputError; never crash, hang or read out of bounds. Seed corpus: fuzz/corpus/torch_checkpoint.
#include <cstdint>
#include <cstring>

#include "engine/formats/torch_checkpoint.h"
#include "engine/util/error.h"
#include "fuzz/tensor_views_inside.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto tensors = specscope::parse_torch_checkpoint(data, size, "fuzz");
    specscope::fuzz::read_every_view(tensors, data, size);
  } catch (const specscope::InputError&) {
  }
  return 0;
}
