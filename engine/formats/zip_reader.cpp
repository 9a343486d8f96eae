#include "engine/formats/zip_reader.h"

#include <algorithm>

#include "engine/util/error.h"

namespace specscope::zip {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kEndSize = 22, kZip64EndSize = 56, kZip64LocatorSize = 20, kCentralSize = 46, kLocalSize = 30;

uint16_t rd16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t rd32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
uint64_t rd64(const uint8_t* p) { return uint64_t(rd32(p)) | uint64_t(rd32(p + 4)) << 32; }

// Reads the zip64 extended-information extra field of a central directory record: only the fields whose 32-bit
// values are saturated are present, in the order uncompressed size, compressed size, local header offset.
void apply_zip64_extra(const uint8_t* extra, size_t len, Entry& e, bool need_size, bool need_csize, bool need_offset,
                       const std::string& where) {
  size_t q = 0;
  bool found = false;
  while (q + 4 <= len) {
    uint16_t id = rd16(extra + q), n = rd16(extra + q + 2);
    if (n > len - q - 4) throw InputError(where, "corrupt ZIP: extra field of '" + e.name + "' overruns its record");
    if (id == 0x0001) {
      found = true;
      size_t r = q + 4, end = q + 4 + n;
      auto take = [&](uint64_t& v) {
        if (end - r < 8) throw InputError(where, "corrupt ZIP: short zip64 extra field for '" + e.name + "'");
        v = rd64(extra + r);
        r += 8;
      };
      if (need_size) take(e.size);
      if (need_csize) take(e.compressed_size);
      if (need_offset) take(e.local_header_offset);
    }
    q += 4 + size_t(n);
  }
  if (!found && (need_size || need_csize || need_offset))
    throw InputError(where, "corrupt ZIP: '" + e.name + "' needs a zip64 extra field but has none");
}

}  // namespace

bool looks_like_zip(const uint8_t* bytes, size_t size) {
  return size >= 4 && (rd32(bytes) == kLocalSig || rd32(bytes) == kEndSig);
}

std::vector<Entry> read_directory(const uint8_t* bytes, size_t size, const std::string& where) {
  if (size < kEndSize) throw InputError(where, "not a ZIP archive (too short for an end-of-central-directory record)");
  // The end record sits at the very end, followed only by a comment of at most 65535 bytes.
  size_t lowest = size > kEndSize + 65535 ? size - kEndSize - 65535 : 0;
  size_t eocd = SIZE_MAX;
  for (size_t i = size - kEndSize + 1; i-- > lowest;) {
    if (rd32(bytes + i) == kEndSig && i + kEndSize + rd16(bytes + i + 20) <= size) {
      eocd = i;
      break;
    }
  }
  if (eocd == SIZE_MAX)
    throw InputError(where, "not a ZIP archive, or a truncated one (no end-of-central-directory record)");
  uint64_t entries = rd16(bytes + eocd + 10);
  uint64_t cd_size = rd32(bytes + eocd + 12);
  uint64_t cd_offset = rd32(bytes + eocd + 16);
  if (rd16(bytes + eocd + 4) != 0 || rd16(bytes + eocd + 6) != 0)
    throw InputError(where, "multi-disk ZIP archives are not supported");
  if (eocd >= kZip64LocatorSize && rd32(bytes + eocd - kZip64LocatorSize) == kZip64LocatorSig) {
    uint64_t z = rd64(bytes + eocd - kZip64LocatorSize + 8);
    if (z > size || size - z < kZip64EndSize || rd32(bytes + z) != kZip64EndSig)
      throw InputError(where, "corrupt ZIP: the zip64 end-of-central-directory locator points outside the file");
    entries = rd64(bytes + z + 32);
    cd_size = rd64(bytes + z + 40);
    cd_offset = rd64(bytes + z + 48);
  } else if (entries == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_offset == 0xFFFFFFFFu) {
    throw InputError(where, "corrupt ZIP: saturated end record without a zip64 locator");
  }
  if (cd_offset > size || cd_size > size - cd_offset)
    throw InputError(where, "truncated or corrupt ZIP: the central directory (offset " + std::to_string(cd_offset) +
                                ", " + std::to_string(cd_size) + " bytes) lies outside the file (" +
                                std::to_string(size) + " bytes)");
  if (entries > cd_size / kCentralSize)
    throw InputError(where, "corrupt ZIP: " + std::to_string(entries) + " entries cannot fit in a central directory of " +
                                std::to_string(cd_size) + " bytes");
  std::vector<Entry> out;
  out.reserve(size_t(entries));
  const uint8_t* cd = bytes + cd_offset;
  size_t p = 0;
  for (uint64_t k = 0; k < entries; ++k) {
    if (cd_size - p < kCentralSize || rd32(cd + p) != kCentralSig)
      throw InputError(where, "corrupt ZIP: bad central directory record " + std::to_string(k));
    const uint8_t* h = cd + p;
    Entry e;
    e.flags = rd16(h + 8);
    e.method = rd16(h + 10);
    e.compressed_size = rd32(h + 20);
    e.size = rd32(h + 24);
    size_t name_len = rd16(h + 28), extra_len = rd16(h + 30), comment_len = rd16(h + 32);
    e.local_header_offset = rd32(h + 42);
    if (cd_size - p - kCentralSize < name_len + extra_len + comment_len)
      throw InputError(where, "corrupt ZIP: central directory record " + std::to_string(k) + " overruns the directory");
    e.name.assign(reinterpret_cast<const char*>(h + kCentralSize), name_len);
    bool need_size = e.size == 0xFFFFFFFFu, need_csize = e.compressed_size == 0xFFFFFFFFu,
         need_offset = e.local_header_offset == 0xFFFFFFFFu;
    apply_zip64_extra(h + kCentralSize + name_len, extra_len, e, need_size, need_csize, need_offset, where);
    p += kCentralSize + name_len + extra_len + comment_len;

    // The local header: its own name and extra field lengths decide where the data starts.
    uint64_t lo = e.local_header_offset;
    if (lo > size || size - lo < kLocalSize || rd32(bytes + lo) != kLocalSig)
      throw InputError(where, "corrupt ZIP: the local header of '" + e.name + "' is missing or outside the file");
    size_t lname = rd16(bytes + lo + 26), lextra = rd16(bytes + lo + 28);
    if (size - lo - kLocalSize < lname + lextra)
      throw InputError(where, "truncated ZIP: the local header of '" + e.name + "' runs past the end of the file");
    if (lname != name_len || !std::equal(bytes + lo + kLocalSize, bytes + lo + kLocalSize + lname, e.name.begin()))
      throw InputError(where, "corrupt ZIP: the local header of '" + e.name + "' names a different file");
    uint64_t data = lo + kLocalSize + lname + lextra;
    if (e.compressed_size > size - data)
      throw InputError(where, "truncated ZIP: the data of '" + e.name + "' (" + std::to_string(e.compressed_size) +
                                  " bytes at offset " + std::to_string(data) + ") runs past the end of the file (" +
                                  std::to_string(size) + " bytes)");
    if (e.method == 0 && !(e.flags & 1)) {
      if (e.size != e.compressed_size)
        throw InputError(where, "corrupt ZIP: stored entry '" + e.name + "' has different sizes in its header");
      e.data_offset = data;
    }
    out.push_back(std::move(e));
  }
  return out;
}

const uint8_t* entry_data(const uint8_t* bytes, size_t size, const Entry& e, const std::string& where) {
  if (e.flags & 1) throw InputError(where, "ZIP entry '" + e.name + "' is encrypted");
  if (e.method != 0)
    throw InputError(where, "ZIP entry '" + e.name + "' is compressed (method " + std::to_string(e.method) +
                                "); only stored (uncompressed) entries can be used in place, as torch.save writes them");
  if (e.data_offset == 0 || e.data_offset > size || e.size > size - e.data_offset)
    throw InputError(where, "ZIP entry '" + e.name + "' lies outside the file");
  return bytes + e.data_offset;
}

}  // namespace specscope::zip
