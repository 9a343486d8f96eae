#pragma once
// SHA-256 (FIPS 180-4), for content identities: the session store names a model by the hash of its config and
// weight index, so a replay can tell whether the model on disk is still the one that was recorded.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace specscope {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::array<uint8_t, 32> digest();  // finishes; the object is spent afterwards
  std::string hex_digest();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view data);

}  // namespace specscope
