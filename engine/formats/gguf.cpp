#include "engine/formats/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "engine/util/error.h"
#include "engine/util/mapped_file.h"

namespace specscope {
namespace {

constexpr uint64_t kMaxKeyLen = 65535;          // the spec's limit on key length
constexpr uint64_t kMaxTensorNameLen = 1024;    // the spec says 64; anything longer is not a real name
constexpr uint32_t kMaxDims = 4;                // GGML_MAX_DIMS
constexpr uint64_t kMaxAlignment = 1u << 30;
constexpr uint64_t kMaxElements = uint64_t(1) << 62;
constexpr uint64_t kMaxCount = uint64_t(1) << 20;        // tensors or metadata keys (real files: thousands at most)
constexpr uint64_t kMaxStringArray = uint64_t(1) << 24;  // strings in one array (vocabularies: ~10^5..10^6)
constexpr size_t kMaxReserve = 4096;  // reserved up front at most, whatever a count claims
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;         // key length, 1-byte key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 4 + 8;  // name length, name, n_dims, type, offset

std::string str(uint64_t v) { return std::to_string(v); }

// Bytes of one array element of a fixed-size type; 0 for strings and arrays.
size_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::BOOL: return 1;
    case GgufValueType::UINT16: case GgufValueType::INT16: return 2;
    case GgufValueType::UINT32: case GgufValueType::INT32: case GgufValueType::FLOAT32: return 4;
    case GgufValueType::UINT64: case GgufValueType::INT64: case GgufValueType::FLOAT64: return 8;
    default: return 0;
  }
}

bool valid_value_type(uint32_t t) { return t <= uint32_t(GgufValueType::FLOAT64); }

// A bounds-checked little-endian cursor over the untrusted buffer.
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t size, const std::string& where) : p_(p), size_(size), where_(where) {}
  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }

  void need(uint64_t n, const std::string& what) const {
    if (n > left())
      throw InputError(where_, "truncated or corrupt GGUF: " + what + " at byte " + str(pos_) + " needs " + str(n) +
                                   " bytes but the file ends at byte " + str(size_));
  }
  template <class T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));  // little-endian hosts only (checked at compile time below)
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const std::string& what, uint64_t max_len) {
    const uint64_t n = read<uint64_t>(what + " length");
    if (n > left())
      throw InputError(where_, "truncated or corrupt GGUF: " + what + " at byte " + str(pos_) + " claims " + str(n) +
                                   " bytes but only " + str(left()) + " remain in the file");
    if (n > max_len) throw InputError(where_, what + " is " + str(n) + " bytes long (at most " + str(max_len) + ")");
    std::string s(reinterpret_cast<const char*>(p_ + pos_), size_t(n));
    pos_ += size_t(n);
    return s;
  }
  // String k of array `key`; the error message is only built on failure (vocabularies hold 10^5 strings).
  std::string read_array_string(const std::string& key, uint64_t k) {
    if (left() < 8 || load_u64() > left() - 8)
      return read_string("string " + str(k) + " of array '" + key + "'", std::numeric_limits<uint64_t>::max());
    const uint64_t n = load_u64();
    pos_ += 8;
    std::string s(reinterpret_cast<const char*>(p_ + pos_), size_t(n));
    pos_ += size_t(n);
    return s;
  }
  const uint8_t* take(uint64_t n, const std::string& what) {
    need(n, what);
    const uint8_t* q = p_ + pos_;
    pos_ += size_t(n);
    return q;
  }

 private:
  uint64_t load_u64() const {
    uint64_t v;
    std::memcpy(&v, p_ + pos_, 8);
    return v;
  }
  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& where_;
};

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

void read_scalar(Cursor& c, GgufValueType t, GgufValue& v, const std::string& what, const std::string& where) {
  v.type = t;
  switch (t) {
    case GgufValueType::UINT8: v.u = c.read<uint8_t>(what); break;
    case GgufValueType::UINT16: v.u = c.read<uint16_t>(what); break;
    case GgufValueType::UINT32: v.u = c.read<uint32_t>(what); break;
    case GgufValueType::UINT64: v.u = c.read<uint64_t>(what); break;
    case GgufValueType::INT8: v.i = c.read<int8_t>(what); break;
    case GgufValueType::INT16: v.i = c.read<int16_t>(what); break;
    case GgufValueType::INT32: v.i = c.read<int32_t>(what); break;
    case GgufValueType::INT64: v.i = c.read<int64_t>(what); break;
    case GgufValueType::FLOAT32: v.f = c.read<float>(what); break;
    case GgufValueType::FLOAT64: v.f = c.read<double>(what); break;
    case GgufValueType::BOOL: {
      const uint8_t b = c.read<uint8_t>(what);
      if (b > 1) throw InputError(where, what + " is a bool with byte value " + str(b) + " (must be 0 or 1)");
      v.u = b;
      break;
    }
    case GgufValueType::STRING: v.str = c.read_string(what, std::numeric_limits<uint64_t>::max()); break;
    default: throw InputError(where, what + " has value type " + str(uint32_t(t)) + ", which is not a scalar");
  }
}

void read_value(Cursor& c, GgufValue& v, const std::string& key, const std::string& where) {
  const uint32_t t = c.read<uint32_t>("type of metadata key '" + key + "'");
  if (!valid_value_type(t))
    throw InputError(where, "metadata key '" + key + "' has unknown value type " + str(t));
  const std::string what = "value of metadata key '" + key + "'";
  if (GgufValueType(t) != GgufValueType::ARRAY) {
    read_scalar(c, GgufValueType(t), v, what, where);
    return;
  }
  v.type = GgufValueType::ARRAY;
  const uint32_t et = c.read<uint32_t>("element type of array '" + key + "'");
  if (!valid_value_type(et))
    throw InputError(where, "array '" + key + "' has unknown element type " + str(et));
  if (GgufValueType(et) == GgufValueType::ARRAY)
    throw InputError(where, "array '" + key + "' holds arrays; nested arrays are not supported");
  v.elem_type = GgufValueType(et);
  v.count = c.read<uint64_t>("element count of array '" + key + "'");
  if (v.elem_type == GgufValueType::STRING) {
    // Each string takes at least its 8-byte length.
    if (v.count > c.left() / 8)
      throw InputError(where, "array '" + key + "' claims " + str(v.count) + " strings but only " + str(c.left()) +
                                  " bytes remain in the file");
    if (v.count > kMaxStringArray)
      throw InputError(where, "array '" + key + "' holds " + str(v.count) + " strings (at most " +
                                  str(kMaxStringArray) + ")");
    v.strings.reserve(size_t(std::min<uint64_t>(v.count, kMaxReserve)));
    for (uint64_t k = 0; k < v.count; ++k) v.strings.push_back(c.read_array_string(key, k));
    return;
  }
  const size_t es = scalar_size(v.elem_type);
  if (v.count > c.left() / es)
    throw InputError(where, "array '" + key + "' claims " + str(v.count) + " elements of " + str(es) +
                                " bytes but only " + str(c.left()) + " bytes remain in the file");
  v.elems = c.take(v.count * es, "elements of array '" + key + "'");
  if (v.elem_type == GgufValueType::BOOL)
    for (uint64_t k = 0; k < v.count; ++k)
      if (v.elems[k] > 1)
        throw InputError(where, "array '" + key + "' element " + str(k) + " is a bool with byte value " +
                                    str(v.elems[k]) + " (must be 0 or 1)");
}

// a * b, or nullopt past `limit`.
std::optional<uint64_t> mul_checked(uint64_t a, uint64_t b, uint64_t limit) {
  if (a != 0 && b > limit / a) return std::nullopt;
  return a * b;
}

std::string type_desc(const GgufValue& v) {
  if (v.type == GgufValueType::ARRAY)
    return "array of " + std::string(gguf_value_type_name(v.elem_type));
  return std::string(gguf_value_type_name(v.type));
}

bool is_int_type(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8: case GgufValueType::UINT16: case GgufValueType::UINT32: case GgufValueType::UINT64:
    case GgufValueType::INT8: case GgufValueType::INT16: case GgufValueType::INT32: case GgufValueType::INT64:
      return true;
    default: return false;
  }
}
bool is_unsigned_type(GgufValueType t) {
  return t == GgufValueType::UINT8 || t == GgufValueType::UINT16 || t == GgufValueType::UINT32 ||
         t == GgufValueType::UINT64;
}

// Element k of a numeric array as a scalar GgufValue.
GgufValue array_elem(const GgufValue& a, uint64_t k) {
  GgufValue v;
  v.type = a.elem_type;
  const uint8_t* p = a.elems + k * scalar_size(a.elem_type);
  switch (a.elem_type) {
    case GgufValueType::UINT8: case GgufValueType::BOOL: v.u = load<uint8_t>(p); break;
    case GgufValueType::UINT16: v.u = load<uint16_t>(p); break;
    case GgufValueType::UINT32: v.u = load<uint32_t>(p); break;
    case GgufValueType::UINT64: v.u = load<uint64_t>(p); break;
    case GgufValueType::INT8: v.i = load<int8_t>(p); break;
    case GgufValueType::INT16: v.i = load<int16_t>(p); break;
    case GgufValueType::INT32: v.i = load<int32_t>(p); break;
    case GgufValueType::INT64: v.i = load<int64_t>(p); break;
    case GgufValueType::FLOAT32: v.f = load<float>(p); break;
    case GgufValueType::FLOAT64: v.f = load<double>(p); break;
    default: break;
  }
  return v;
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8: return "uint8";
    case GgufValueType::INT8: return "int8";
    case GgufValueType::UINT16: return "uint16";
    case GgufValueType::INT16: return "int16";
    case GgufValueType::UINT32: return "uint32";
    case GgufValueType::INT32: return "int32";
    case GgufValueType::FLOAT32: return "float32";
    case GgufValueType::BOOL: return "bool";
    case GgufValueType::STRING: return "string";
    case GgufValueType::ARRAY: return "array";
    case GgufValueType::UINT64: return "uint64";
    case GgufValueType::INT64: return "int64";
    case GgufValueType::FLOAT64: return "float64";
  }
  return "unknown";
}

bool GgufValue::is_integer() const { return is_int_type(type); }

// ---- tensors ----

std::vector<int64_t> GgufTensor::shape() const {
  std::vector<int64_t> s;
  for (uint32_t k = n_dims; k-- > 0;) s.push_back(ne[k]);
  return s;
}

size_t GgufTensor::row_bytes() const { return ggml_row_size(type, ne[0]); }

std::string GgufTensor::shape_str() const {
  std::string s = "[";
  auto sh = shape();
  for (size_t k = 0; k < sh.size(); ++k) s += (k ? ", " : "") + std::to_string(sh[k]);
  return s + "] " + std::string(ggml_type_name(type));
}

TensorView GgufTensor::view(const std::string& where) const {
  TensorView v;
  switch (type) {
    case GgmlType::F32: v.dtype = DType::F32; break;
    case GgmlType::F16: v.dtype = DType::F16; break;
    case GgmlType::BF16: v.dtype = DType::BF16; break;
    case GgmlType::I32: v.dtype = DType::I32; break;
    case GgmlType::I64: v.dtype = DType::I64; break;
    default:
      throw InputError(where, "tensor '" + name + "' has type " + std::string(ggml_type_name(type)) +
                                  ", which cannot be used without dequantization");
  }
  v.name = name;
  v.shape = shape();
  v.data = data;
  v.keep_alive = keep_alive;
  return v;
}

// ---- parsing ----

GgufFile GgufFile::open(const std::string& path) {
  auto file = MappedFile::open(path);
  const uint8_t* data = file->data();
  const size_t size = file->size();
  return parse(data, size, path, std::move(file));
}

GgufFile GgufFile::parse(const uint8_t* bytes, size_t size, const std::string& where,
                         std::shared_ptr<const void> keep_alive) {
  GgufFile g;
  g.where_ = where;
  g.keep_ = std::move(keep_alive);
  Cursor c(bytes, size, g.where_);

  if (size < 4 || std::memcmp(bytes, "GGUF", 4) != 0) throw InputError(where, "not a GGUF file (bad magic)");
  c.take(4, "magic");
  const uint32_t version = c.read<uint32_t>("version");
  if (version == 1) throw InputError(where, "GGUF version 1 is not supported (only versions 2 and 3)");
  if (version == 0x02000000u || version == 0x03000000u)
    throw InputError(where, "big-endian GGUF files are not supported");
  if (version != 2 && version != 3)
    throw InputError(where, "unsupported GGUF version " + str(version) + " (only versions 2 and 3)");
  g.version_ = version;
  const uint64_t n_tensors = c.read<uint64_t>("tensor count");
  const uint64_t n_kv = c.read<uint64_t>("metadata count");
  if (n_kv > c.left() / kMinKvBytes || n_kv > kMaxCount)
    throw InputError(where, "absurd metadata count " + str(n_kv) + " for a file of " + str(size) + " bytes");
  if (n_tensors > c.left() / kMinTensorInfoBytes || n_tensors > kMaxCount)
    throw InputError(where, "absurd tensor count " + str(n_tensors) + " for a file of " + str(size) + " bytes");

  // Metadata.
  g.kvs_.reserve(size_t(std::min<uint64_t>(n_kv, kMaxReserve)));
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = c.read_string("metadata key " + str(k), kMaxKeyLen);
    if (key.empty()) throw InputError(where, "metadata key " + str(k) + " is empty");
    if (g.index_.count(key)) throw InputError(where, "metadata key '" + key + "' appears twice");
    GgufValue v;
    read_value(c, v, key, where);
    g.index_.emplace(key, g.kvs_.size());
    g.kvs_.emplace_back(std::move(key), std::move(v));
  }

  if (const GgufValue* a = g.find("general.alignment")) {
    if (a->type != GgufValueType::UINT32)
      throw InputError(where, "general.alignment has type " + type_desc(*a) + " (it must be uint32)");
    if (a->u == 0 || (a->u & (a->u - 1)) != 0 || a->u > kMaxAlignment)
      throw InputError(where, "general.alignment " + str(a->u) + " must be a power of two no larger than 2^30");
    g.alignment_ = a->u;
  }

  // Tensor infos.
  if (n_tensors > c.left() / kMinTensorInfoBytes)
    throw InputError(where, "absurd tensor count " + str(n_tensors) + ": the tensor table would run past the end of "
                            "the file (" + str(c.left()) + " bytes left after the metadata)");
  g.tensors_.reserve(size_t(std::min<uint64_t>(n_tensors, kMaxReserve)));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensor t;
    t.name = c.read_string("name of tensor " + str(k), kMaxTensorNameLen);
    if (t.name.empty()) throw InputError(where, "tensor " + str(k) + " has an empty name");
    if (g.tensor_index_.count(t.name)) throw InputError(where, "tensor '" + t.name + "' appears twice");
    const std::string tn = "tensor '" + t.name + "'";
    t.n_dims = c.read<uint32_t>("n_dims of " + tn);
    if (t.n_dims > kMaxDims)
      throw InputError(where, tn + " has " + str(t.n_dims) + " dimensions (at most " + str(kMaxDims) + ")");
    uint64_t span = 1;  // the product of the dims with zeros counted as 1: views never overflow
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      const uint64_t ne = c.read<uint64_t>("dimension " + str(d) + " of " + tn);
      auto s = mul_checked(span, std::max<uint64_t>(ne, 1), kMaxElements);
      if (!s) throw InputError(where, tn + " has dimensions whose product overflows (dimension " + str(d) + " is " +
                                          str(ne) + ")");
      span = *s;
      t.ne[d] = int64_t(ne);
    }
    const uint32_t type = c.read<uint32_t>("type of " + tn);
    const GgmlTypeInfo* info = ggml_type_info(type);
    if (!info) throw InputError(where, tn + " has unknown ggml type " + str(type));
    t.type = info->type;
    if (t.ne[0] % info->block_size != 0)
      throw InputError(where, tn + " has " + str(uint64_t(t.ne[0])) + " elements per row, not a multiple of the " +
                                  info->name + " block size " + str(uint64_t(info->block_size)));
    // nbytes = ne0 / block * type_size * (ne1 * ne2 * ne3), at most ~2^62 * 292 / 1: check for overflow.
    auto nb = mul_checked(uint64_t(t.ne[0] / info->block_size), info->type_size, UINT64_MAX);
    if (nb) nb = mul_checked(*nb, uint64_t(t.ne[1] * t.ne[2] * t.ne[3]), UINT64_MAX);
    if (!nb) throw InputError(where, tn + " is absurdly large");
    t.nbytes = *nb;
    t.offset = c.read<uint64_t>("offset of " + tn);
    if (t.offset % g.alignment_ != 0)
      throw InputError(where, tn + " offset " + str(t.offset) + " is not a multiple of the alignment " +
                                  str(g.alignment_));
    g.tensor_index_.emplace(t.name, g.tensors_.size());
    g.tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment.
  const uint64_t info_end = c.pos();
  g.data_offset_ = (info_end + g.alignment_ - 1) / g.alignment_ * g.alignment_;
  const uint64_t data_size = g.data_offset_ <= size ? size - g.data_offset_ : 0;
  for (auto& t : g.tensors_) {
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      throw InputError(where, "tensor '" + t.name + "' (" + t.shape_str() + ", " + str(t.nbytes) +
                                  " bytes at data offset " + str(t.offset) +
                                  ") lies outside the file's data section (" +
                                  str(data_size) + " bytes from byte " + str(g.data_offset_) +
                                  "): truncated or corrupt file");
    t.data = bytes + g.data_offset_ + t.offset;
    t.keep_alive = g.keep_;
  }
  // No two tensors may share bytes.
  std::vector<size_t> order(g.tensors_.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return g.tensors_[a].offset < g.tensors_[b].offset; });
  const GgufTensor* prev = nullptr;
  for (size_t k : order) {
    const GgufTensor& t = g.tensors_[k];
    if (t.nbytes == 0) continue;
    if (prev && prev->offset + prev->nbytes > t.offset)
      throw InputError(where, "tensors '" + prev->name + "' and '" + t.name + "' overlap in the data section");
    prev = &t;
  }
  return g;
}

// ---- metadata access ----

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &kvs_[it->second].second;
}

const GgufValue& GgufFile::get(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) throw InputError(where_, "missing metadata key '" + key + "'");
  return *v;
}

namespace {

[[noreturn]] void wrong_type(const std::string& where, const std::string& key, const GgufValue& v,
                             const std::string& expected) {
  throw InputError(where, "metadata key '" + key + "' has type " + type_desc(v) + ", expected " + expected);
}

int64_t to_int(const std::string& where, const std::string& key, const GgufValue& v) {
  if (!is_int_type(v.type)) wrong_type(where, key, v, "an integer");
  if (is_unsigned_type(v.type)) {
    if (v.u > uint64_t(std::numeric_limits<int64_t>::max()))
      throw InputError(where, "metadata key '" + key + "' value " + std::to_string(v.u) + " does not fit int64");
    return int64_t(v.u);
  }
  return v.i;
}

double to_float(const std::string& where, const std::string& key, const GgufValue& v) {
  if (v.type == GgufValueType::FLOAT32 || v.type == GgufValueType::FLOAT64) return v.f;
  if (is_unsigned_type(v.type)) return double(v.u);
  if (is_int_type(v.type)) return double(v.i);
  wrong_type(where, key, v, "a number");
}

}  // namespace

std::string GgufFile::get_string(const std::string& key) const {
  const GgufValue& v = get(key);
  if (v.type != GgufValueType::STRING) wrong_type(where_, key, v, "a string");
  return v.str;
}

int64_t GgufFile::get_int(const std::string& key) const { return to_int(where_, key, get(key)); }

uint64_t GgufFile::get_uint(const std::string& key) const {
  const GgufValue& v = get(key);
  if (!is_int_type(v.type)) wrong_type(where_, key, v, "an integer");
  if (is_unsigned_type(v.type)) return v.u;
  if (v.i < 0) throw InputError(where_, "metadata key '" + key + "' is negative (" + std::to_string(v.i) + ")");
  return uint64_t(v.i);
}

double GgufFile::get_float(const std::string& key) const { return to_float(where_, key, get(key)); }

bool GgufFile::get_bool(const std::string& key) const {
  const GgufValue& v = get(key);
  if (v.type != GgufValueType::BOOL) wrong_type(where_, key, v, "a bool");
  return v.u != 0;
}

std::string GgufFile::get_string(const std::string& key, const std::string& dflt) const {
  return has(key) ? get_string(key) : dflt;
}
int64_t GgufFile::get_int(const std::string& key, int64_t dflt) const { return has(key) ? get_int(key) : dflt; }
double GgufFile::get_float(const std::string& key, double dflt) const { return has(key) ? get_float(key) : dflt; }
bool GgufFile::get_bool(const std::string& key, bool dflt) const { return has(key) ? get_bool(key) : dflt; }

uint64_t GgufFile::array_size(const std::string& key) const {
  const GgufValue& v = get(key);
  if (v.type != GgufValueType::ARRAY) wrong_type(where_, key, v, "an array");
  return v.count;
}

std::vector<std::string> GgufFile::get_string_array(const std::string& key) const {
  const GgufValue& v = get(key);
  if (v.type != GgufValueType::ARRAY || v.elem_type != GgufValueType::STRING)
    wrong_type(where_, key, v, "an array of strings");
  return v.strings;
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
  const GgufValue& v = get(key);
  if (v.type != GgufValueType::ARRAY || !is_int_type(v.elem_type)) wrong_type(where_, key, v, "an array of integers");
  std::vector<int64_t> out;
  out.reserve(size_t(v.count));
  for (uint64_t k = 0; k < v.count; ++k) out.push_back(to_int(where_, key, array_elem(v, k)));
  return out;
}

std::vector<double> GgufFile::get_float_array(const std::string& key) const {
  const GgufValue& v = get(key);
  if (v.type != GgufValueType::ARRAY || !(is_int_type(v.elem_type) || v.elem_type == GgufValueType::FLOAT32 ||
                                          v.elem_type == GgufValueType::FLOAT64))
    wrong_type(where_, key, v, "an array of numbers");
  std::vector<double> out;
  out.reserve(size_t(v.count));
  for (uint64_t k = 0; k < v.count; ++k) out.push_back(to_float(where_, key, array_elem(v, k)));
  return out;
}

std::vector<bool> GgufFile::get_bool_array(const std::string& key) const {
  const GgufValue& v = get(key);
  if (v.type != GgufValueType::ARRAY || v.elem_type != GgufValueType::BOOL)
    wrong_type(where_, key, v, "an array of bools");
  std::vector<bool> out;
  out.reserve(size_t(v.count));
  for (uint64_t k = 0; k < v.count; ++k) out.push_back(v.elems[k] != 0);
  return out;
}

// ---- tensor access ----

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::tensor(const std::string& name) const {
  const GgufTensor* t = find_tensor(name);
  if (!t) throw InputError(where_, "missing tensor '" + name + "'");
  return *t;
}

void GgufFile::dequantize_rows(const GgufTensor& t, int64_t first, int64_t count, float* dst) const {
  if (!ggml_can_dequantize(t.type))
    throw InputError(where_, "tensor '" + t.name + "' has type " + std::string(ggml_type_name(t.type)) +
                                 ", which SpecScope cannot dequantize yet");
  if (first < 0 || count < 0 || first > t.rows() || count > t.rows() - first)
    throw std::out_of_range("GgufFile::dequantize_rows: rows outside tensor '" + t.name + "'");
  if (t.numel() == 0) return;
  const size_t rb = t.row_bytes();
  for (int64_t r = 0; r < count; ++r)
    dequantize_row(t.type, t.data + size_t(first + r) * rb, dst + r * t.ne[0], t.ne[0]);
}

std::vector<float> GgufFile::dequantize(const GgufTensor& t) const {
  std::vector<float> out(size_t(t.numel()));
  dequantize_rows(t, 0, t.rows(), out.data());
  return out;
}

}  // namespace specscope
