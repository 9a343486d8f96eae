#pragma once
// Reads GGUF files (versions 2 and 3, little-endian): the metadata key/values and the tensor table, with the
// tensors left in place in a memory mapping. These files come from strangers, so every count, length, type,
// shape and offset is checked against the file size and against sane limits before it is used; a bad file
// gives InputError(path, problem), never a crash.
//
// Layout: "GGUF", u32 version, u64 tensor count, u64 kv count; kv pairs (string key, u32 value type, value);
// tensor infos (string name, u32 n_dims, u64 ne[n_dims] with ne[0] the fastest-varying, u32 ggml type,
// u64 offset); padding to general.alignment (a uint32 power of two, default 32); the data section, where each
// tensor starts at its offset (a multiple of the alignment). Strings are u64 length + UTF-8 bytes; arrays are
// u32 element type + u64 count + elements. Arrays of arrays are rejected (no known writer produces them).
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/formats/gguf_quant.h"
#include "engine/util/tensor.h"

namespace specscope {

enum class GgufValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
std::string_view gguf_value_type_name(GgufValueType t);  // "uint32", "string", "array", ...

// One metadata value. Scalars are decoded; numeric and bool arrays point into the mapping (which the
// GgufFile keeps alive); string arrays are copied.
struct GgufValue {
  GgufValueType type = GgufValueType::UINT8;
  uint64_t u = 0;       // unsigned integer types and bool
  int64_t i = 0;        // signed integer types
  double f = 0;         // float32 / float64
  std::string str;      // string
  // array
  GgufValueType elem_type = GgufValueType::UINT8;
  uint64_t count = 0;
  const uint8_t* elems = nullptr;  // numeric/bool arrays: count packed little-endian elements
  std::vector<std::string> strings;  // string arrays

  bool is_integer() const;
  bool is_float() const { return type == GgufValueType::FLOAT32 || type == GgufValueType::FLOAT64; }
};

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  uint32_t n_dims = 0;
  std::array<int64_t, 4> ne{1, 1, 1, 1};  // ggml order: ne[0] varies fastest; unused dims are 1
  uint64_t offset = 0;                    // from the start of the data section
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr;          // into the mapping
  std::shared_ptr<const void> keep_alive; // the mapping

  int64_t numel() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  // Row-major shape (PyTorch order): ne reversed, n_dims entries. A [rows, cols] weight has ne = {cols, rows}.
  std::vector<int64_t> shape() const;
  int64_t cols() const { return ne[0]; }                  // elements per row
  int64_t rows() const { return ne[1] * ne[2] * ne[3]; }  // rows in the 2-D [rows, cols] view
  size_t row_bytes() const;
  const uint8_t* row(int64_t r) const { return data + size_t(r) * row_bytes(); }
  std::string shape_str() const;  // "[rows, cols] Q4_K"
  // A TensorView (shape() order) for the types DType can hold (F32, F16, BF16, I32, I64); InputError otherwise.
  TensorView view(const std::string& where) const;
};

class GgufFile {
 public:
  // Maps and parses a file; InputError naming the path when it cannot be read or is malformed.
  static GgufFile open(const std::string& path);
  // Parses an untrusted buffer (used by open and by the fuzzer). Views point into `bytes`, which must outlive
  // the result unless `keep_alive` owns it. `where` names the buffer in errors.
  static GgufFile parse(const uint8_t* bytes, size_t size, const std::string& where,
                        std::shared_ptr<const void> keep_alive = nullptr);

  const std::string& path() const { return where_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section

  // ---- metadata ----
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kvs_; }  // file order
  bool has(const std::string& key) const { return index_.count(key) > 0; }
  const GgufValue* find(const std::string& key) const;
  const GgufValue& get(const std::string& key) const;  // InputError when missing
  // Typed getters: InputError naming the file and the key when the key is missing or of another type.
  std::string get_string(const std::string& key) const;
  int64_t get_int(const std::string& key) const;     // any integer type that fits int64
  uint64_t get_uint(const std::string& key) const;   // any non-negative integer
  double get_float(const std::string& key) const;    // float32/float64, or an integer
  bool get_bool(const std::string& key) const;
  // The same with a default for a missing key (a present key of the wrong type is still an error).
  std::string get_string(const std::string& key, const std::string& dflt) const;
  int64_t get_int(const std::string& key, int64_t dflt) const;
  double get_float(const std::string& key, double dflt) const;
  bool get_bool(const std::string& key, bool dflt) const;
  // Arrays: InputError when the key is missing, not an array, or holds another element type.
  uint64_t array_size(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;   // integer elements (uint64 <= INT64_MAX)
  std::vector<double> get_float_array(const std::string& key) const;  // float or integer elements
  std::vector<bool> get_bool_array(const std::string& key) const;

  // ---- tensors ----
  const std::vector<GgufTensor>& tensors() const { return tensors_; }  // file order
  const GgufTensor* find_tensor(const std::string& name) const;
  const GgufTensor& tensor(const std::string& name) const;  // InputError when missing
  // Dequantizes rows [first, first + count) of the 2-D view into dst (count * cols floats); InputError when
  // the type cannot be dequantized, std::out_of_range for rows outside the tensor.
  void dequantize_rows(const GgufTensor& t, int64_t first, int64_t count, float* dst) const;
  std::vector<float> dequantize(const GgufTensor& t) const;  // the whole tensor (small tensors, tests)

 private:
  std::string where_;
  std::shared_ptr<const void> keep_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kvs_;
  std::map<std::string, size_t> index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace specscope
