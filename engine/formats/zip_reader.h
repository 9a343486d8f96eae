#pragma once
// A read-only view of the entries of a ZIP archive held in memory (a mapped file or an untrusted buffer), as
// written by torch.save: entries stored without compression, zip64 end records. Only the central directory and
// the local headers are parsed; every length and offset is checked against the buffer, so a malformed archive
// throws InputError and never reads outside `bytes`.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace specscope::zip {

struct Entry {
  std::string name;
  uint16_t method = 0;        // 0 = stored; anything else is refused by entry_data()
  uint16_t flags = 0;         // general-purpose bit flags (bit 0 = encrypted)
  uint64_t size = 0;          // uncompressed size
  uint64_t compressed_size = 0;
  uint64_t local_header_offset = 0;
  uint64_t data_offset = 0;   // where the entry's bytes start (after the local header, name and extra field)
};

// Lists the entries from the central directory (zip64 aware) and locates each one's data through its local header.
// Throws InputError(where, ...) when the buffer is not a well-formed ZIP archive. Compressed or encrypted entries
// are listed (so that the caller can name them) but have data_offset 0; use entry_data() to get the bytes.
std::vector<Entry> read_directory(const uint8_t* bytes, size_t size, const std::string& where);

// The bytes of a stored entry; throws InputError naming the entry when it is compressed or encrypted.
const uint8_t* entry_data(const uint8_t* bytes, size_t size, const Entry& e, const std::string& where);

// True when the buffer starts like a ZIP archive (a local file header or an empty archive's end record).
bool looks_like_zip(const uint8_t* bytes, size_t size);

}  // namespace specscope::zip
