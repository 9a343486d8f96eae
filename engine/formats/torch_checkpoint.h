#pragma once
// Reads PyTorch checkpoints written by torch.save (the zip format: archive/data.pkl + archive/data/N) that
// hold a plain state dict: a dict (or OrderedDict) of name -> tensor. The pickle is *interpreted*, never
// executed: only the opcodes and globals a state dict needs are accepted (torch._utils._rebuild_tensor_v2,
// torch.*Storage, collections.OrderedDict); anything else is refused with a clear message. Tensor data is
// used in place from the memory mapping (torch.save stores entries uncompressed).
#include <map>
#include <memory>
#include <string>

#include "engine/util/mapped_file.h"
#include "engine/util/tensor.h"

namespace specscope {

// Throws InputError(file path, problem) for anything that is not such a checkpoint.
std::map<std::string, TensorView> load_torch_checkpoint(std::shared_ptr<MappedFile> file);
// The same from an untrusted buffer (for the fuzzer); views point into `bytes`.
std::map<std::string, TensorView> parse_torch_checkpoint(const uint8_t* bytes, size_t size, const std::string& where);

}  // namespace specscope
