#pragma once
// Reads Hugging Face safetensors files (single or sharded with model.safetensors.index.json) as views into
// memory mappings. Every header field is validated: these files come from strangers.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/util/mapped_file.h"
#include "engine/util/tensor.h"

namespace specscope {

class TensorStore {
 public:
  // Loads `model.safetensors`, or the shards named by `model.safetensors.index.json`, from a directory,
  // or a single .safetensors file. Throws InputError naming the file and the problem.
  static TensorStore open_dir(const std::string& dir);
  static TensorStore open_file(const std::string& path);
  // Parses one file's header and adds its tensors; `bytes`/`size` may be any untrusted buffer.
  void add_file(std::shared_ptr<MappedFile> file);
  // Adds tensors parsed from `file` by another reader (PyTorch checkpoints); they keep the mapping alive.
  void add_tensors(std::shared_ptr<MappedFile> file, std::map<std::string, TensorView> tensors);

  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  const TensorView& get(const std::string& name) const;  // InputError when missing
  const std::map<std::string, TensorView>& all() const { return tensors_; }
  std::map<std::string, std::string> metadata;  // the __metadata__ block(s)
  std::vector<std::string> files;               // paths, for error messages and model identity

 private:
  std::map<std::string, TensorView> tensors_;
};

// Parses a safetensors header from an untrusted buffer (used by add_file and by the fuzzer).
// Returns the tensors with `data` pointing into `bytes`. Throws InputError(where, ...).
std::map<std::string, TensorView> parse_safetensors(const uint8_t* bytes, size_t size, const std::string& where,
                                                    std::map<std::string, std::string>* metadata = nullptr);

}  // namespace specscope
