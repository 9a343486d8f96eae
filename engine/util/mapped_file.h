#pragma once
// A read-only memory-mapped file. Weights are used in place from the mapping, never copied.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace specscope {

class MappedFile {
 public:
  // Throws InputError naming the path when it cannot be opened or mapped.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Reads a whole (small) file into a string; throws InputError naming the path on failure.
std::string read_text_file(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace specscope
