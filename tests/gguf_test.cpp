// engine/formats/gguf.h and gguf_quant.h against files written by the gguf Python package (tests/fixtures/gguf,
// made by tests/fixtures/make_gguf_fixtures.py): metadata round trip, dequantization bit-exact with
// gguf.quants.dequantize, quantization bit-exact with gguf.quants.quantize, dot products within a stated bound,
// and malformed files made by mutating the good ones (every one an InputError naming the file).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include <nlohmann/json.hpp>

#include "engine/formats/gguf.h"
#include "engine/formats/gguf_file_type.h"
#include "engine/formats/gguf_quant.h"
#include "engine/util/error.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const json& expected() {
  static const json j = [] {
    std::ifstream in(test::fixture("gguf/expected.json"));
    return in ? json::parse(in) : json::object();
  }();
  return j;
}

const json& file_info(const std::string& name) { return expected().at("files").at(name); }

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

const std::vector<float>& golden() {
  static const std::vector<float> g = [] {
    auto b = read_bytes(test::fixture("gguf/golden.bin"));
    std::vector<float> f(b.size() / 4);
    std::memcpy(f.data(), b.data(), f.size() * 4);
    return f;
  }();
  return g;
}

// The floats expected.json locates as [offset, count] in golden.bin.
std::vector<float> golden_at(const json& loc) {
  const size_t off = loc.at(0).get<size_t>(), n = loc.at(1).get<size_t>();
  EXPECT_LE(off + n, golden().size());
  if (off + n > golden().size()) return {};
  return std::vector<float>(golden().begin() + long(off), golden().begin() + long(off + n));
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Index of the first element whose bits differ, or -1.
long first_bit_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (bits(a[i]) != bits(b[i])) return long(i);
  return -1;
}

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST(GgufTypes, TableMatchesTheGgufPackage) {
  const json& sizes = expected().at("quant_sizes");
  ASSERT_FALSE(sizes.empty());
  int checked = 0;
  for (const auto& [name, s] : sizes.items()) {
    const uint32_t id = s.at("id").get<uint32_t>();
    const GgmlTypeInfo* info = ggml_type_info(id);
    ASSERT_NE(info, nullptr) << name << " (id " << id << ") is not in our table";
    EXPECT_EQ(std::string(info->name), name);
    EXPECT_EQ(info->block_size, s.at("block_size").get<int64_t>()) << name;
    // Q8_1 is f16 d + f16 s + 32 x int8 = 36 bytes in ggml (block_q8_1); the package still lists the old 40
    // (f32 d and s). It is an activation format that no GGUF file stores.
    if (name == "Q8_1")
      EXPECT_EQ(info->type_size, 36u);
    else
      EXPECT_EQ(info->type_size, s.at("type_size").get<size_t>()) << name;
    ++checked;
  }
  EXPECT_GE(checked, 30);
  for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 1000u}) EXPECT_EQ(ggml_type_info(removed), nullptr);
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1,
                     GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K})
    EXPECT_TRUE(ggml_can_dequantize(t)) << ggml_type_name(t);
  for (GgmlType t : {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1}) EXPECT_TRUE(ggml_can_quantize(t));
  EXPECT_FALSE(ggml_can_dequantize(GgmlType::Q3_K));
  EXPECT_FALSE(ggml_can_dequantize(GgmlType::Q8_1));
  EXPECT_EQ(ggml_row_size(GgmlType::Q5_1, 64), 48u);
  EXPECT_EQ(ggml_row_size(GgmlType::Q4_K, 512), 288u);
  EXPECT_THROW(ggml_row_size(GgmlType::Q4_K, 500), std::invalid_argument);
}

// ---- metadata ----

void check_metadata(const std::string& file) {
  SCOPED_TRACE(file);
  const json& info = file_info(file);
  GgufFile g = GgufFile::open(test::fixture("gguf/" + file));
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), info.at("alignment").get<uint64_t>());
  EXPECT_EQ(g.data_offset(), info.at("data_offset").get<uint64_t>());

  // Every key, in file order, with its type and value.
  std::vector<std::string> keys;
  for (const auto& [k, _] : g.metadata()) keys.push_back(k);
  EXPECT_EQ(keys, info.at("key_order").get<std::vector<std::string>>());
  for (const auto& [key, e] : info.at("metadata").items()) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(g.has(key));
    const GgufValue& v = g.get(key);
    const std::string type = e.at("type").get<std::string>();
    EXPECT_EQ(std::string(gguf_value_type_name(v.type)), type);
    const json& want = e.at("value");
    if (type == "string") {
      EXPECT_EQ(g.get_string(key), want.get<std::string>());
    } else if (type == "bool") {
      EXPECT_EQ(g.get_bool(key), want.get<bool>());
    } else if (type == "float32" || type == "float64") {
      EXPECT_EQ(g.get_float(key), want.get<double>());  // float32 values are written as their exact double
    } else if (type == "uint64" || type == "uint32" || type == "uint16" || type == "uint8") {
      EXPECT_EQ(g.get_uint(key), want.get<uint64_t>());
      if (want.get<uint64_t>() <= uint64_t(INT64_MAX)) EXPECT_EQ(uint64_t(g.get_int(key)), want.get<uint64_t>());
    } else if (type == "array") {
      const std::string et = e.at("elem_type").get<std::string>();
      EXPECT_EQ(std::string(gguf_value_type_name(v.elem_type)), et);
      EXPECT_EQ(g.array_size(key), want.size());
      if (et == "string") {
        EXPECT_EQ(g.get_string_array(key), want.get<std::vector<std::string>>());
      } else if (et == "bool") {
        EXPECT_EQ(g.get_bool_array(key), want.get<std::vector<bool>>());
      } else if (et == "float32" || et == "float64") {
        EXPECT_EQ(g.get_float_array(key), want.get<std::vector<double>>());
      } else if (et == "uint64") {  // may exceed int64: compare the raw elements
        ASSERT_EQ(v.count, want.size());
        for (size_t k = 0; k < want.size(); ++k) {
          uint64_t u;
          std::memcpy(&u, v.elems + 8 * k, 8);
          EXPECT_EQ(u, want[k].get<uint64_t>());
        }
      } else {
        EXPECT_EQ(g.get_int_array(key), want.get<std::vector<int64_t>>());
      }
    } else {
      EXPECT_EQ(g.get_int(key), want.get<int64_t>());
    }
  }
}

TEST(GgufMetadata, RoundTripsEveryValueType) {
  check_metadata("all_types.gguf");
  check_metadata("align64.gguf");
  check_metadata("small.gguf");
}

// The typed getters refuse other types, and every refusal names the file and the key.
TEST(GgufMetadata, TypedGettersCheckTypes) {
  const std::string path = test::fixture("gguf/all_types.gguf");
  GgufFile g = GgufFile::open(path);
  auto expect_error = [&](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no InputError (" << needle << ")";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), path);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { g.get_string("test.uint8"); }, "'test.uint8' has type uint8, expected a string");
  expect_error([&] { g.get_int("test.string"); }, "'test.string' has type string, expected an integer");
  expect_error([&] { g.get_int("test.float32"); }, "expected an integer");
  expect_error([&] { g.get_bool("test.uint8"); }, "expected a bool");
  expect_error([&] { g.get_float("test.string"); }, "expected a number");
  expect_error([&] { g.get_int("test.uint64"); }, "does not fit int64");
  expect_error([&] { g.get_uint("test.int8"); }, "negative");
  expect_error([&] { g.get_string("no.such.key"); }, "missing metadata key 'no.such.key'");
  expect_error([&] { g.get_string_array("test.arr.int32"); }, "has type array of int32, expected an array of strings");
  expect_error([&] { g.get_int_array("test.arr.float32"); }, "expected an array of integers");
  expect_error([&] { g.get_int_array("test.arr.uint64"); }, "does not fit int64");
  expect_error([&] { g.get_float_array("test.arr.string"); }, "expected an array of numbers");
  expect_error([&] { g.array_size("test.string"); }, "expected an array");
  expect_error([&] { g.tensor("no.such.tensor"); }, "missing tensor 'no.such.tensor'");
  // Defaults apply to missing keys only.
  EXPECT_EQ(g.get_int("no.such.key", 42), 42);
  EXPECT_EQ(g.get_string("no.such.key", "d"), "d");
  EXPECT_EQ(g.get_float("no.such.key", 1.5), 1.5);
  EXPECT_TRUE(g.get_bool("no.such.key", true));
  EXPECT_EQ(g.get_int("test.int8", 0), -100);
  expect_error([&] { g.get_int("test.string", 0); }, "expected an integer");
  // Integers read as floats; float arrays read integer elements.
  EXPECT_EQ(g.get_float("test.int32"), -2000000000.0);
  EXPECT_EQ(g.get_float_array("test.arr.int8"), (std::vector<double>{-128, 0, 127}));
  EXPECT_EQ(g.get_string("general.architecture"), "specscope-test");
}

// ---- tensors ----

TEST(GgufTensors, TableMatchesTheWriter) {
  for (const std::string file : {"all_types.gguf", "align64.gguf", "small.gguf"}) {
    SCOPED_TRACE(file);
    const json& info = file_info(file);
    auto bytes = read_bytes(test::fixture("gguf/" + file));
    ASSERT_EQ(bytes.size(), info.at("size").get<size_t>());
    GgufFile g = GgufFile::parse(bytes.data(), bytes.size(), file);
    ASSERT_EQ(g.tensors().size(), info.at("tensors").size());
    for (size_t k = 0; k < g.tensors().size(); ++k) {
      const GgufTensor& t = g.tensors()[k];
      const json& e = info.at("tensors")[k];
      const json& lay = info.at("layout").at("tensors").at(t.name);
      SCOPED_TRACE(t.name);
      EXPECT_EQ(t.name, e.at("name").get<std::string>());
      EXPECT_EQ(uint32_t(t.type), e.at("type_id").get<uint32_t>());
      EXPECT_EQ(std::string(ggml_type_name(t.type)), e.at("type").get<std::string>());
      const auto ne = e.at("ne").get<std::vector<int64_t>>();
      const auto shape = e.at("shape").get<std::vector<int64_t>>();
      EXPECT_EQ(t.n_dims, ne.size());
      EXPECT_EQ(t.shape(), shape);
      for (size_t d = 0; d < 4; ++d) EXPECT_EQ(t.ne[d], d < ne.size() ? ne[d] : 1);
      EXPECT_EQ(t.cols(), ne[0]);
      int64_t rows = 1;
      for (size_t d = 1; d < ne.size(); ++d) rows *= ne[d];
      EXPECT_EQ(t.rows(), rows);
      EXPECT_EQ(t.nbytes, lay.at("nbytes").get<uint64_t>());
      EXPECT_EQ(t.nbytes, t.row_bytes() * size_t(t.rows()));
      EXPECT_EQ(t.data, bytes.data() + lay.at("data_offset").get<size_t>());
      EXPECT_EQ(g.data_offset() + t.offset, lay.at("data_offset").get<uint64_t>());
      EXPECT_EQ(t.offset % g.alignment(), 0u);
      EXPECT_EQ(g.find_tensor(t.name), &t);
    }
  }
}

// Dequantization equals gguf.quants.dequantize bit for bit, for every type, including the K-quants (no 1-ulp
// allowance is needed): both sides do the same f32 operations in the same order, and every product involved
// (f16 d with its 11-bit significand times a 6- or 7-bit scale times a quant of at most 6 bits) fits in 24 bits,
// so it is exact; the only rounding is Q4_K/Q5_K's final d1*q - m1, one correctly rounded IEEE-754 subtraction
// on both sides (identical even if a compiler fuses it into an FMA, since d1*q is exact).
TEST(GgufDequantize, BitExactWithTheGgufPackage) {
  for (const std::string file : {"all_types.gguf", "align64.gguf", "small.gguf"}) {
    GgufFile g = GgufFile::open(test::fixture("gguf/" + file));
    for (const json& e : file_info(file).at("tensors")) {
      const std::string name = e.at("name").get<std::string>();
      SCOPED_TRACE(file + " " + name);
      const GgufTensor& t = g.tensor(name);
      const std::vector<float> want = golden_at(e.at("values"));
      const std::vector<float> got = g.dequantize(t);
      ASSERT_EQ(got.size(), want.size());
      const long bad = first_bit_difference(got, want);
      EXPECT_EQ(bad, -1) << "element " << bad << ": " << (bad >= 0 ? got[size_t(bad)] : 0.f) << " vs "
                         << (bad >= 0 ? want[size_t(bad)] : 0.f);
      // Row by row gives the same values.
      std::vector<float> row(size_t(t.cols()));
      for (int64_t r = 0; r < t.rows(); ++r) {
        g.dequantize_rows(t, r, 1, row.data());
        EXPECT_EQ(0, std::memcmp(row.data(), want.data() + r * t.cols(), row.size() * 4)) << "row " << r;
      }
    }
  }
}

// quantize_row gives the very bytes gguf.quants.quantize wrote (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1: ggml's reference
// quantizers; F16 and BF16: round to nearest even), so dequantize(quantize(x)) equals the package's
// quantize+dequantize.
TEST(GgufQuantize, BitExactWithTheGgufPackage) {
  int checked = 0;
  for (const std::string file : {"all_types.gguf", "align64.gguf", "small.gguf"}) {
    GgufFile g = GgufFile::open(test::fixture("gguf/" + file));
    for (const json& e : file_info(file).at("tensors")) {
      if (!e.contains("source")) continue;
      const std::string name = e.at("name").get<std::string>();
      SCOPED_TRACE(file + " " + name);
      const GgufTensor& t = g.tensor(name);
      ASSERT_TRUE(ggml_can_quantize(t.type));
      const std::vector<float> x = golden_at(e.at("source"));
      ASSERT_EQ(int64_t(x.size()), t.numel());
      std::vector<uint8_t> q(t.nbytes);
      for (int64_t r = 0; r < t.rows(); ++r)
        quantize_row(t.type, x.data() + r * t.cols(), q.data() + size_t(r) * t.row_bytes(), t.cols());
      for (size_t b = 0; b < q.size(); ++b)
        if (q[b] != t.data[b]) {
          ADD_FAILURE() << "byte " << b << " (block " << b / ggml_type_size(t.type) << "): " << int(q[b])
                        << " vs the package's " << int(t.data[b]);
          break;
        }
      std::vector<float> back(x.size());
      dequantize_row(t.type, q.data(), back.data(), int64_t(back.size()));
      EXPECT_EQ(first_bit_difference(back, golden_at(e.at("values"))), -1);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 7 + 1 + 7);  // all_types: F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1; align64: Q8_0; small: as all_types
}

// F16 rows decode exactly as dtype.h's f16_to_f32 does, for every one of the 65536 halves (NaN payloads too).
TEST(GgufDequantize, F16DecodesEveryHalf) {
  std::vector<uint16_t> h(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = uint16_t(i);
  std::vector<float> got(65536);
  dequantize_row(GgmlType::F16, h.data(), got.data(), 65536);
  for (uint32_t i = 0; i < 65536; ++i) ASSERT_EQ(bits(got[i]), bits(f16_to_f32(uint16_t(i)))) << "half " << i;
}

TEST(GgufQuantize, Q8_0AndQ4_0EdgeCases) {
  // Zero block: d = 0, every code the zero point.
  std::vector<float> x(32, 0.0f);
  uint8_t q8[34], q4[18];
  quantize_row(GgmlType::Q8_0, x.data(), q8, 32);
  quantize_row(GgmlType::Q4_0, x.data(), q4, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(q8[2 + j], 0);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(q4[2 + j], 0x88);
  // Non-finite inputs give defined codes (no undefined float->int conversion; UBSan checks this in the fuzzer).
  x[0] = NAN;
  x[1] = INFINITY;
  x[2] = -INFINITY;
  quantize_row(GgmlType::Q8_0, x.data(), q8, 32);
  quantize_row(GgmlType::Q4_0, x.data(), q4, 32);
  EXPECT_THROW(quantize_row(GgmlType::Q4_K, x.data(), q4, 256), std::invalid_argument);
  EXPECT_THROW(quantize_row(GgmlType::Q8_0, x.data(), q8, 31), std::invalid_argument);
}

TEST(GgufQuantize, Q4_1Q5_0Q5_1EdgeCases) {
  // Zero block: d = 0 and m = 0. Q4_1/Q5_1 codes are all 0; Q5_0's are 16 (its zero point): nibble 0, fifth bit 1.
  // Q5_0's d is 0 / -16 = -0.0 (f16 0x8000), as in ggml and the package.
  std::vector<float> x(32, 0.0f), back(32);
  uint8_t q41[20], q50[22], q51[24];
  quantize_row(GgmlType::Q4_1, x.data(), q41, 32);
  quantize_row(GgmlType::Q5_0, x.data(), q50, 32);
  quantize_row(GgmlType::Q5_1, x.data(), q51, 32);
  for (int j = 0; j < 20; ++j) EXPECT_EQ(q41[j], 0) << j;
  EXPECT_EQ(q50[0], 0x00);
  EXPECT_EQ(q50[1], 0x80);
  for (int j = 2; j < 6; ++j) EXPECT_EQ(q50[j], 0xFF) << j;
  for (int j = 6; j < 22; ++j) EXPECT_EQ(q50[j], 0) << j;
  for (int j = 0; j < 24; ++j) EXPECT_EQ(q51[j], 0) << j;
  // A constant block (max == min): d = 0, every value comes back as m = f16(c).
  std::fill(x.begin(), x.end(), 0.3f);
  for (GgmlType t : {GgmlType::Q4_1, GgmlType::Q5_1}) {
    uint8_t q[24];
    quantize_row(t, x.data(), q, 32);
    dequantize_row(t, q, back.data(), 32);
    for (float v : back) EXPECT_EQ(v, f16_to_f32(f32_to_f16(0.3f))) << ggml_type_name(t);
  }
  // Min 0, max 15 (Q4_1) or 31 (Q5_1): d = 1 exactly, so codes are trunc(x + 0.5) and integers come back exactly.
  for (int j = 0; j < 32; ++j) x[size_t(j)] = float(j % 16);
  quantize_row(GgmlType::Q4_1, x.data(), q41, 32);
  dequantize_row(GgmlType::Q4_1, q41, back.data(), 32);
  EXPECT_EQ(back, x);
  for (int j = 0; j < 32; ++j) x[size_t(j)] = float(31 - j);
  quantize_row(GgmlType::Q5_1, x.data(), q51, 32);
  dequantize_row(GgmlType::Q5_1, q51, back.data(), 32);
  EXPECT_EQ(back, x);
  // Q5_0 with max -16 (d = 1): every integer in [-16, 15] round-trips; 15.5 rounds up to 16 and is clamped to 15.
  for (int j = 0; j < 32; ++j) x[size_t(j)] = float(j - 16);
  std::swap(x[0], x[5]);  // -16 not first: the element of largest magnitude is found wherever it is
  quantize_row(GgmlType::Q5_0, x.data(), q50, 32);
  dequantize_row(GgmlType::Q5_0, q50, back.data(), 32);
  EXPECT_EQ(back, x);
  x[31] = 15.5f;
  quantize_row(GgmlType::Q5_0, x.data(), q50, 32);
  dequantize_row(GgmlType::Q5_0, q50, back.data(), 32);
  EXPECT_EQ(back[31], 15.0f);
  // Non-finite inputs give defined codes (no undefined float->int conversion; UBSan checks this in the fuzzer).
  x[0] = NAN;
  x[1] = INFINITY;
  x[2] = -INFINITY;
  quantize_row(GgmlType::Q4_1, x.data(), q41, 32);
  quantize_row(GgmlType::Q5_0, x.data(), q50, 32);
  quantize_row(GgmlType::Q5_1, x.data(), q51, 32);
  for (GgmlType t : {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1})
    EXPECT_THROW(quantize_row(t, x.data(), q51, 48), std::invalid_argument) << ggml_type_name(t);
}

// A second oracle for the block layouts, written from the format description rather than checked against the
// package: blocks built by hand with every code 0..15 or 0..31 at known positions. Q5's fifth bit of element j is
// bit j of the little-endian uint32 qh, so elements j and j + 16 (sharing byte j of qs) take theirs from different
// qh bytes.
TEST(GgufDequantize, NibbleFormatsFollowTheBlockLayout) {
  const float d = 0.25f, m = -1.5f;  // exact in f16: every expected value below is exact
  const uint16_t dh = f32_to_f16(d), mh = f32_to_f16(m);
  auto code = [](int j, int bits) { return (7 * j + 3) % (1 << bits); };  // a permutation of 0..31 / two of 0..15
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1}) {
    SCOPED_TRACE(std::string(ggml_type_name(t)));
    const bool has_min = t == GgmlType::Q4_1 || t == GgmlType::Q5_1;
    const bool five = t == GgmlType::Q5_0 || t == GgmlType::Q5_1;
    const int bits = five ? 5 : 4;
    std::vector<uint8_t> blk(ggml_type_size(t), 0);
    std::memcpy(blk.data(), &dh, 2);
    size_t at = 2;
    if (has_min) {
      std::memcpy(blk.data() + at, &mh, 2);
      at += 2;
    }
    uint32_t qh = 0;
    for (int j = 0; j < 32; ++j) qh |= uint32_t(code(j, bits) >> 4) << j;
    if (five) {
      for (int i = 0; i < 4; ++i) blk[at + size_t(i)] = uint8_t(qh >> (8 * i));
      at += 4;
    }
    for (int j = 0; j < 16; ++j) blk[at + size_t(j)] = uint8_t((code(j, bits) & 15) | (code(j + 16, bits) & 15) << 4);
    ASSERT_EQ(at + 16, blk.size());
    std::vector<float> got(32);
    dequantize_row(t, blk.data(), got.data(), 32);
    const int zero = has_min ? 0 : (five ? 16 : 8);
    for (int j = 0; j < 32; ++j)
      EXPECT_EQ(got[size_t(j)], float(code(j, bits) - zero) * d + (has_min ? m : 0.f)) << "element " << j;
  }
}

// ---- dot products ----

// vec_dot computes the exact dequantized weights w_i, the products w_i*x_i in f32 summed in f32 over chunks of
// at most 32, and the chunk sums in f64, rounded to f32 at the end. Summing m terms in f32 in any order, with
// each product rounded (or fused), errs by at most gamma_m * sum|terms| (gamma_m = m*u / (1 - m*u), u = 2^-24;
// Higham, Accuracy and Stability, ch. 3), so a chunk of 32 errs by <= gamma_32 * sum|w_i*x_i| < 32.0001 u *
// sum|w_i x_i|; the f64 accumulation adds about n/32 * 2^-53 of that, and the final rounding to f32 at most
// u * |result| <= u * sum|w_i x_i|. Hence |vec_dot - exact| <= 34 u * sum_i |w_i * x_i|, and the reference below
// (f64 products and sum of the same w and x) is exact to well within that.
constexpr double kDotBound = 34.0 / 16777216.0;

struct DotCheck {
  double ref = 0, mag = 0;
};

DotCheck reference_dot(const float* w, const float* x, int64_t n) {
  DotCheck c;
  for (int64_t i = 0; i < n; ++i) {
    c.ref += double(w[i]) * double(x[i]);
    c.mag += std::fabs(double(w[i]) * double(x[i]));
  }
  return c;
}

void check_dot(GgmlType type, const uint8_t* row, const float* w, const float* x, int64_t n, const std::string& what) {
  const DotCheck c = reference_dot(w, x, n);
  std::vector<VecDotKernel> kernels{VecDotKernel::Auto, VecDotKernel::Scalar};
  if (vec_dot_avx2_available()) kernels.push_back(VecDotKernel::Avx2);
  float scalar = 0;
  for (VecDotKernel k : kernels) {
    const float got = vec_dot_with(k, type, row, x, n);
    if (k == VecDotKernel::Scalar) scalar = got;
    EXPECT_LE(std::fabs(double(got) - c.ref), kDotBound * c.mag)
        << what << " kernel " << int(k) << ": " << got << " vs " << c.ref << " (sum |w x| = " << c.mag << ")";
  }
  EXPECT_EQ(vec_dot(type, row, x, n), vec_dot_with(VecDotKernel::Auto, type, row, x, n));
  if (vec_dot_avx2_available()) {  // the AVX2 kernel agrees with the scalar one within both bounds
    const float avx = vec_dot_with(VecDotKernel::Avx2, type, row, x, n);
    EXPECT_LE(std::fabs(double(avx) - double(scalar)), 2 * kDotBound * c.mag) << what;
  }
}

TEST(GgufVecDot, MatchesF64ReferenceWithinBound) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  int rows = 0;
  for (const std::string file : {"all_types.gguf", "align64.gguf", "small.gguf"}) {
    GgufFile g = GgufFile::open(test::fixture("gguf/" + file));
    for (const json& e : file_info(file).at("tensors")) {
      const GgufTensor& t = g.tensor(e.at("name").get<std::string>());
      const std::vector<float> w = golden_at(e.at("values"));
      std::vector<float> x(size_t(t.cols()));
      for (int64_t r = 0; r < t.rows(); ++r) {
        for (auto& v : x) v = normal(rng) * std::exp2(float(int(rng() % 16) - 8));  // a wide dynamic range
        check_dot(t.type, t.row(r), w.data() + r * t.cols(), x.data(), t.cols(), file + " " + t.name);
        ++rows;
      }
    }
  }
  EXPECT_GE(rows, 20);
}

// Long rows (16 super-blocks) of every type, with random blocks and sane scales.
TEST(GgufVecDot, LongRowsOfEveryType) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  const int64_t n = 4096;
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1,
                     GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    std::vector<float> src(static_cast<size_t>(n));
    for (auto& v : src) v = normal(rng);
    std::vector<uint8_t> row(ggml_row_size(t, n));
    if (ggml_can_quantize(t)) {
      quantize_row(t, src.data(), row.data(), n);
    } else {
      for (auto& b : row) b = uint8_t(rng());
      const size_t bs = ggml_type_size(t);
      for (size_t b = 0; b < row.size(); b += bs) {  // finite f16 scales ~ 0.01
        const uint16_t d = uint16_t(0x2000 + rng() % 0x400), dmin = uint16_t(0x2000 + rng() % 0x400);
        if (t == GgmlType::Q6_K) {
          std::memcpy(&row[b + 208], &d, 2);
        } else {
          std::memcpy(&row[b], &d, 2);
          std::memcpy(&row[b + 2], &dmin, 2);
        }
      }
    }
    std::vector<float> w(static_cast<size_t>(n)), x(static_cast<size_t>(n));
    dequantize_row(t, row.data(), w.data(), n);
    for (auto& v : x) v = normal(rng);
    check_dot(t, row.data(), w.data(), x.data(), n, std::string(ggml_type_name(t)));
    // An odd length for the one-element types exercises the chunk tail.
    if (ggml_block_size(t) == 1) check_dot(t, row.data(), w.data(), x.data(), 77, "tail");
  }
}

// ---- the mapping and views ----

TEST(GgufTensors, KeepTheMappingAliveAndViewAsTensorView) {
  GgufTensor t;
  const std::vector<float> want = golden_at(file_info("all_types.gguf").at("tensors")[0].at("values"));
  {
    GgufFile g = GgufFile::open(test::fixture("gguf/all_types.gguf"));
    t = g.tensor("t.f32");
    TensorView v = t.view(g.path());
    EXPECT_EQ(v.shape, (std::vector<int64_t>{2, 512}));
    EXPECT_EQ(v.dtype, DType::F32);
    EXPECT_EQ(v.to_f32(), want);
    TensorView h = g.tensor("t.bf16").view(g.path());
    EXPECT_EQ(h.dtype, DType::BF16);
    EXPECT_THROW(g.tensor("t.q4_k").view(g.path()), InputError);
    EXPECT_EQ(g.tensor("t.3d").shape(), (std::vector<int64_t>{2, 3, 32}));
    EXPECT_EQ(g.tensor("t.3d").rows(), 6);
    EXPECT_EQ(g.tensor("t.q4_k").shape_str(), "[2, 512] Q4_K");
    std::vector<float> buf(10);
    EXPECT_THROW(g.dequantize_rows(g.tensor("t.f32"), 1, 2, buf.data()), std::out_of_range);
  }
  // The file object is gone; the tensor's keep_alive still holds the mapping.
  std::vector<float> out(1024);
  dequantize_row(t.type, t.data, out.data(), 1024);
  EXPECT_EQ(out, want);
}

// ---- malformed files ----

std::string temp_dir() {
  static const std::string d = [] {
    fs::path p = fs::temp_directory_path() / ("specscope_gguf_test_" + std::to_string(::getpid()));
    fs::create_directories(p);
    return p.string();
  }();
  return d;
}

// Removes the scratch folder after the last test.
struct TempDirCleanup : ::testing::Environment {
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("specscope_gguf_test_" + std::to_string(::getpid())), ec);
  }
};
[[maybe_unused]] ::testing::Environment* const kCleanup = ::testing::AddGlobalTestEnvironment(new TempDirCleanup);

template <class T>
void put(std::vector<uint8_t>& b, size_t off, T v) {
  ASSERT_LE(off + sizeof(T), b.size());
  std::memcpy(b.data() + off, &v, sizeof(T));
}

template <class T>
T get_at(const std::vector<uint8_t>& b, size_t off) {
  T v{};
  if (off + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

// Parses `bytes` (written to a file, opened through the mapping) and expects an InputError whose message starts
// with the path and whose problem contains `needle` (case-insensitive; "" for any).
void expect_bad(const std::vector<uint8_t>& bytes, const std::string& name, const std::string& needle) {
  SCOPED_TRACE(name);
  const std::string path = temp_dir() + "/" + name + ".gguf";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  try {
    GgufFile g = GgufFile::open(path);
    ADD_FAILURE() << "parsed without an error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path);
    EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    EXPECT_NE(lower(e.problem()).find(lower(needle)), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InputError: " << e.what();
  }
  fs::remove(path);
}

struct Fixture {
  std::vector<uint8_t> bytes;
  const json& info;
  explicit Fixture(const std::string& name)
      : bytes(read_bytes(test::fixture("gguf/" + name))), info(file_info(name)) {}
  size_t kv(const std::string& key, const char* field) const {
    return info.at("layout").at("kv").at(key).at(field).get<size_t>();
  }
  size_t ti(const std::string& name, const char* field) const {
    return info.at("layout").at("tensors").at(name).at(field).get<size_t>();
  }
  // A copy with one field overwritten.
  template <class T>
  std::vector<uint8_t> with(size_t off, T v) const {
    auto b = bytes;
    put(b, off, v);
    return b;
  }
};

TEST(GgufMalformed, HeaderMutations) {
  Fixture f("all_types.gguf");
  const uint64_t n_tensors = get_at<uint64_t>(f.bytes, 8), n_kv = get_at<uint64_t>(f.bytes, 16);
  auto bad_magic = f.bytes;
  bad_magic[0] = 'X';
  expect_bad(bad_magic, "bad_magic", "bad magic");
  expect_bad(std::vector<uint8_t>{'G', 'G'}, "two_bytes", "bad magic");
  expect_bad(std::vector<uint8_t>{}, "empty", "bad magic");
  expect_bad(f.with<uint32_t>(4, 1), "version1", "version 1 is not supported");
  expect_bad(f.with<uint32_t>(4, 4), "version4", "unsupported GGUF version 4");
  expect_bad(f.with<uint32_t>(4, 0), "version0", "unsupported GGUF version 0");
  expect_bad(f.with<uint32_t>(4, 0x03000000u), "big_endian", "big-endian");
  expect_bad(f.with<uint64_t>(8, uint64_t(1) << 40), "tensor_count_absurd", "absurd tensor count");
  expect_bad(f.with<uint64_t>(8, UINT64_MAX), "tensor_count_max", "absurd tensor count");
  expect_bad(f.with<uint64_t>(16, uint64_t(1) << 40), "kv_count_absurd", "absurd metadata count");
  expect_bad(f.with<uint64_t>(16, UINT64_MAX), "kv_count_max", "absurd metadata count");
  // Plausible for the file size, but more than the bytes left after the metadata could describe.
  expect_bad(f.with<uint64_t>(8, (f.bytes.size() - 24) / 25), "tensor_count_past_table", "run past the end");
  expect_bad(f.with<uint64_t>(8, n_tensors + 1), "tensor_count_plus_one", "");
  expect_bad(f.with<uint64_t>(16, n_kv + 1), "kv_count_plus_one", "");
  expect_bad(f.with<uint64_t>(16, n_kv - 1), "kv_count_minus_one", "");
  // Version 2 has the same layout and is accepted.
  auto v2 = f.with<uint32_t>(4, 2);
  GgufFile g = GgufFile::parse(v2.data(), v2.size(), "v2");
  EXPECT_EQ(g.version(), 2u);
  EXPECT_EQ(g.tensors().size(), n_tensors);
}

TEST(GgufMalformed, MetadataMutations) {
  Fixture f("all_types.gguf");
  const uint64_t size = f.bytes.size();
  const size_t first_key = f.kv("general.architecture", "offset");
  expect_bad(f.with<uint64_t>(first_key, size), "key_length_past_end", "claims");
  expect_bad(f.with<uint64_t>(first_key, uint64_t(1) << 63), "key_length_huge", "claims");
  expect_bad(f.with<uint64_t>(first_key, 0), "key_empty", "empty");
  expect_bad(f.with<uint64_t>(f.kv("test.string", "value_offset"), size), "string_length_past_end", "claims");
  expect_bad(f.with<uint64_t>(f.kv("test.long_string", "value_offset"), UINT64_MAX), "string_length_max", "claims");
  expect_bad(f.with<uint32_t>(f.kv("test.uint8", "type_offset"), 13), "value_type_unknown", "unknown value type 13");
  expect_bad(f.with<uint32_t>(f.kv("test.uint8", "type_offset"), 0xffffffffu), "value_type_max", "unknown value type");
  expect_bad(f.with<uint8_t>(f.kv("test.bool_true", "value_offset"), 2), "bool_two", "must be 0 or 1");
  // Arrays: element type, then count, then the elements.
  const size_t arr = f.kv("test.arr.int32", "value_offset");
  expect_bad(f.with<uint32_t>(arr, 99), "array_elem_type_unknown", "unknown element type 99");
  expect_bad(f.with<uint32_t>(arr, 9), "array_nested", "nested arrays are not supported");
  expect_bad(f.with<uint64_t>(arr + 4, uint64_t(1) << 61), "array_count_absurd", "claims");
  expect_bad(f.with<uint64_t>(arr + 4, UINT64_MAX), "array_count_max", "claims");
  const size_t sarr = f.kv("test.arr.string", "value_offset");
  expect_bad(f.with<uint64_t>(sarr + 4, uint64_t(1) << 61), "string_array_count_absurd", "claims");
  expect_bad(f.with<uint64_t>(sarr + 12, size), "string_array_elem_past_end", "claims");
  expect_bad(f.with<uint8_t>(f.kv("test.arr.bool", "value_offset") + 12, 7), "bool_array_seven", "must be 0 or 1");
  // A key renamed to an earlier one of the same length.
  auto dup = f.bytes;
  const size_t k64 = f.kv("test.uint64", "offset");
  std::memcpy(dup.data() + k64 + 8, "test.uint32", 11);
  expect_bad(dup, "key_twice", "appears twice");
}

TEST(GgufMalformed, TensorInfoMutations) {
  Fixture f("all_types.gguf");
  const uint64_t data_size = f.bytes.size() - f.info.at("data_offset").get<uint64_t>();
  const uint64_t past = (data_size + 32) / 32 * 32;
  expect_bad(f.with<uint64_t>(f.ti("t.q6_k", "offset_offset"), past), "offset_out_of_range", "outside");
  expect_bad(f.with<uint64_t>(f.ti("t.q6_k", "offset_offset"), uint64_t(1) << 63), "offset_huge", "outside");
  const uint64_t last_off = get_at<uint64_t>(f.bytes, f.ti("t.1d", "offset_offset"));
  expect_bad(f.with<uint64_t>(f.ti("t.1d", "offset_offset"), last_off + 1), "offset_misaligned", "not a multiple");
  expect_bad(f.with<uint64_t>(f.ti("t.1d", "offset_offset"), last_off + 16), "offset_misaligned16", "not a multiple");
  // Two tensors sharing bytes.
  const uint64_t f32_off = get_at<uint64_t>(f.bytes, f.ti("t.f32", "offset_offset"));
  expect_bad(f.with<uint64_t>(f.ti("t.f16", "offset_offset"), f32_off), "overlap", "overlap");
  expect_bad(f.with<uint32_t>(f.ti("t.f16", "type_offset"), 0), "f16_as_f32", "overlap");  // twice the bytes
  for (uint32_t type : {4u, 5u, 31u, 36u, 42u, 1000u, 0xffffffffu})
    expect_bad(f.with<uint32_t>(f.ti("t.q8_0", "type_offset"), type), "type_" + std::to_string(type),
               "unknown ggml type " + std::to_string(type));
  expect_bad(f.with<uint32_t>(f.ti("t.f32", "n_dims_offset"), 5), "n_dims_5", "5 dimensions");
  expect_bad(f.with<uint32_t>(f.ti("t.f32", "n_dims_offset"), 0xffffffffu), "n_dims_max", "dimensions");
  const size_t dims = f.ti("t.f32", "dims_offset");
  expect_bad(f.with<uint64_t>(dims, uint64_t(1) << 63), "dim_2_63", "overflows");
  expect_bad(f.with<uint64_t>(dims, UINT64_MAX), "dim_max", "overflows");
  expect_bad(f.with<uint64_t>(dims + 8, uint64_t(1) << 62), "dims_product_overflows", "overflows");
  {
    auto b = f.with<uint64_t>(dims, uint64_t(1) << 32);
    put<uint64_t>(b, dims + 8, uint64_t(1) << 32);
    expect_bad(b, "dims_2_32_squared", "overflows");
  }
  expect_bad(f.with<uint64_t>(dims + 8, 1000000), "dims_too_big_for_file", "outside");
  expect_bad(f.with<uint64_t>(f.ti("t.q4_k", "dims_offset"), 500), "row_not_whole_blocks", "block size 256");
  expect_bad(f.with<uint64_t>(f.ti("t.q8_0", "dims_offset"), 33), "row_not_whole_q8_blocks", "block size 32");
  for (const char* t : {"t.q4_1", "t.q5_0", "t.q5_1"})
    expect_bad(f.with<uint64_t>(f.ti(t, "dims_offset"), 48), std::string("row_not_whole_blocks_") + t, "block size 32");
  expect_bad(f.with<uint64_t>(f.ti("t.f32", "offset"), 2000), "name_too_long", "at most 1024");
  // A tensor renamed to an earlier one.
  auto dup = f.bytes;
  std::memcpy(dup.data() + f.ti("t.f16", "offset") + 8, "t.f32", 5);
  expect_bad(dup, "tensor_twice", "appears twice");
}

TEST(GgufMalformed, AlignmentMutations) {
  Fixture f("align64.gguf");
  GgufFile good = GgufFile::parse(f.bytes.data(), f.bytes.size(), "align64");
  EXPECT_EQ(good.alignment(), 64u);
  EXPECT_EQ(good.data_offset() % 64, 0u);
  const size_t a = f.kv("general.alignment", "value_offset");
  expect_bad(f.with<uint32_t>(a, 0), "alignment_0", "must be a power of two");
  expect_bad(f.with<uint32_t>(a, 3), "alignment_3", "must be a power of two");
  expect_bad(f.with<uint32_t>(a, 96), "alignment_96", "must be a power of two");
  expect_bad(f.with<uint32_t>(a, 0x80000000u), "alignment_2_31", "must be a power of two");
  expect_bad(f.with<uint32_t>(a, 128), "alignment_128", "not a multiple of the alignment 128");
  expect_bad(f.with<uint32_t>(f.kv("general.alignment", "type_offset"), 5), "alignment_int32", "must be uint32");
}

// Every truncation that cuts into the header, the tensor infos or any tensor's bytes is an InputError; cutting
// only the padding after the last tensor leaves a valid file.
TEST(GgufMalformed, TruncatedAtEveryByte) {
  for (const std::string file : {"all_types.gguf", "align64.gguf", "small.gguf"}) {
    Fixture f(file);
    uint64_t last_end = 0;
    for (const auto& [_, t] : f.info.at("layout").at("tensors").items())
      last_end = std::max(last_end, t.at("data_offset").get<uint64_t>() + t.at("nbytes").get<uint64_t>());
    ASSERT_LE(last_end, f.bytes.size());
    int errors = 0;
    for (size_t cut = 0; cut < f.bytes.size(); ++cut) {
      const std::string where = file + " cut at " + std::to_string(cut);
      try {
        GgufFile g = GgufFile::parse(f.bytes.data(), cut, where);
        EXPECT_GE(cut, last_end) << where << " parsed";
      } catch (const InputError& e) {
        EXPECT_LT(cut, last_end) << e.what();
        EXPECT_EQ(e.where(), where);
        ++errors;
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << ": not an InputError: " << e.what();
      }
    }
    EXPECT_EQ(uint64_t(errors), last_end) << file;
  }
  // A sample through the mapping, for the path in the message.
  Fixture f("all_types.gguf");
  for (size_t cut : {size_t(3), size_t(20), size_t(100), size_t(4000), size_t(5000), f.bytes.size() - 300}) {
    auto b = f.bytes;
    b.resize(cut);
    expect_bad(b, "truncated_" + std::to_string(cut), "");
  }
}

// A file cut inside the data of a Q4_1, Q5_0 or Q5_1 tensor (its last block one byte short, or only its first block
// there) is an InputError that names that tensor and its type: the earlier tensors are whole, so it is the first
// one the reader finds outside the data section.
TEST(GgufMalformed, TruncatedNibbleTensorsNameTheTensor) {
  Fixture f("all_types.gguf");
  for (const std::string name : {"t.q4_1", "t.q5_0", "t.q5_1", "t.q4_1_raw", "t.q5_0_raw", "t.q5_1_raw"}) {
    const size_t start = f.ti(name, "data_offset"), nbytes = f.ti(name, "nbytes");
    const std::string type = name.substr(2, 4);  // "q4_1"; expect_bad compares case-insensitively
    for (size_t cut : {start + nbytes - 1, start + 1}) {
      auto b = f.bytes;
      b.resize(cut);
      expect_bad(b, "cut_" + name + "_" + std::to_string(cut - start),
                 "tensor '" + name + "' ([2, 512] " + type + ", " + std::to_string(nbytes) + " bytes");
    }
  }
}

// Deterministic random corruptions of the small file: each parses or throws InputError, and what parses is
// usable (tensors inside the buffer, dequantization and dot products run).
TEST(GgufMalformed, RandomCorruptionsParseOrThrowInputError) {
  Fixture f("small.gguf");
  const size_t data_start = f.info.at("data_offset").get<size_t>();
  std::mt19937 rng(3);
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto b = f.bytes;
    const int flips = 1 + int(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t pos = rng() % data_start;  // corrupt the header and tables (the data has no structure)
      b[pos] = (rng() % 2) ? uint8_t(rng()) : uint8_t(b[pos] ^ (1u << (rng() % 8)));
    }
    if (rng() % 5 == 0) b.resize(rng() % b.size());
    try {
      GgufFile g = GgufFile::parse(b.data(), b.size(), "corrupt");
      for (const auto& t : g.tensors()) {
        ASSERT_GE(t.data, b.data());
        ASSERT_LE(t.data + t.nbytes, b.data() + b.size());
        if (ggml_can_dequantize(t.type) && t.numel() > 0 && t.numel() <= (1 << 16)) {
          auto w = g.dequantize(t);
          std::vector<float> x(size_t(t.cols()), 1.0f);
          (void)vec_dot(t.type, t.row(t.rows() - 1), x.data(), t.cols());
        }
      }
      for (const auto& [k, v] : g.metadata()) {
        const bool numeric_array = v.type == GgufValueType::ARRAY && v.elem_type != GgufValueType::STRING &&
                                   v.elem_type != GgufValueType::BOOL;
        if (numeric_array) {
          try {
            (void)g.get_float_array(k);
          } catch (const InputError&) {
          }
        }
      }
      ++parsed;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "corrupt");
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "iteration " << iter << ": not an InputError: " << e.what();
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

// Files built here byte by byte: what the writer cannot produce.
struct Builder {
  std::vector<uint8_t> b;
  template <class T>
  Builder& v(T x) {
    const auto* p = reinterpret_cast<const uint8_t*>(&x);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  Builder& s(const std::string& x) {
    v<uint64_t>(x.size());
    b.insert(b.end(), x.begin(), x.end());
    return *this;
  }
  Builder& header(uint64_t n_tensors, uint64_t n_kv) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return v<uint32_t>(3).v<uint64_t>(n_tensors).v<uint64_t>(n_kv);
  }
  Builder& pad(size_t align = 32) {
    while (b.size() % align) b.push_back(0);
    return *this;
  }
};

TEST(GgufBuilt, EdgeCasesTheWriterCannotMake) {
  {  // An empty array, a zero-size tensor and a 0-d tensor are fine.
    Builder x;
    x.header(2, 1).s("k.empty").v<uint32_t>(9).v<uint32_t>(5).v<uint64_t>(0);
    x.s("zero").v<uint32_t>(2).v<uint64_t>(0).v<uint64_t>(7).v<uint32_t>(0).v<uint64_t>(0);
    x.s("scalar").v<uint32_t>(0).v<uint32_t>(0).v<uint64_t>(0);
    x.pad().v<float>(2.5f);
    GgufFile g = GgufFile::parse(x.b.data(), x.b.size(), "built");
    EXPECT_EQ(g.array_size("k.empty"), 0u);
    EXPECT_TRUE(g.get_int_array("k.empty").empty());
    EXPECT_EQ(g.tensor("zero").numel(), 0);
    EXPECT_EQ(g.tensor("zero").nbytes, 0u);
    EXPECT_TRUE(g.dequantize(g.tensor("zero")).empty());
    EXPECT_EQ(g.tensor("scalar").shape(), std::vector<int64_t>{});
    EXPECT_EQ(g.dequantize(g.tensor("scalar")), std::vector<float>{2.5f});
  }
  {  // No tensors and no data section at all.
    Builder x;
    x.header(0, 1).s("a").v<uint32_t>(4).v<uint32_t>(1);
    GgufFile g = GgufFile::parse(x.b.data(), x.b.size(), "built");
    EXPECT_TRUE(g.tensors().empty());
    EXPECT_EQ(g.get_uint("a"), 1u);
  }
  auto expect_built_bad = [](const Builder& x, const std::string& needle) {
    try {
      GgufFile::parse(x.b.data(), x.b.size(), "built.gguf");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "built.gguf");
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  {  // Zero-size dims never make the views overflow.
    Builder x;
    x.header(1, 0).s("z").v<uint32_t>(4).v<uint64_t>(0).v<uint64_t>(uint64_t(1) << 40).v<uint64_t>(uint64_t(1) << 40);
    x.v<uint64_t>(1).v<uint32_t>(0).v<uint64_t>(0);
    expect_built_bad(x, "overflows");
  }
  {  // A nested array.
    Builder x;
    x.header(0, 1).s("nest").v<uint32_t>(9).v<uint32_t>(9).v<uint64_t>(1).v<uint32_t>(4).v<uint64_t>(1).v<uint32_t>(1);
    expect_built_bad(x, "nested arrays are not supported");
  }
  {  // Empty tensor name.
    Builder x;
    x.header(1, 0).s("").v<uint32_t>(1).v<uint64_t>(1).v<uint32_t>(0).v<uint64_t>(0);
    x.pad().v<float>(1);
    expect_built_bad(x, "empty name");
  }
  {  // Tensor data starting in the file but running past its end.
    Builder x;
    x.header(1, 0).s("t").v<uint32_t>(1).v<uint64_t>(8).v<uint32_t>(0).v<uint64_t>(0);
    x.pad().v<float>(1);
    expect_built_bad(x, "outside the file's data section");
  }
}

// What a file's quantization is called (gguf_file_type.h): general.file_type as llama.cpp names it, else the type of
// most of the layers' bytes, never the embedding's type alone (Q6_K in every Llama-3.2 Q4_K_M download).
TEST(GgufBuilt, FileTypeNamesTheQuantizationAsLlamaCppDoes) {
  // Tensors (name, ggml type, elements, bytes), each at a 256-byte slot of the data section.
  struct T {
    std::string name;
    uint32_t type;
    uint64_t n, bytes;
  };
  auto build = [](const std::function<void(Builder&)>& kvs, int n_kv, const std::vector<T>& tensors) {
    Builder x;
    x.header(tensors.size(), uint64_t(n_kv));
    kvs(x);
    for (size_t i = 0; i < tensors.size(); ++i)
      x.s(tensors[i].name).v<uint32_t>(1).v<uint64_t>(tensors[i].n).v<uint32_t>(tensors[i].type).v<uint64_t>(i * 256);
    x.pad();
    for (const auto& t : tensors) {
      x.b.insert(x.b.end(), t.bytes, uint8_t(0));
      x.b.insert(x.b.end(), 256 - t.bytes, uint8_t(0));
    }
    return x;
  };
  auto name_of = [](const Builder& x) { return gguf_file_type_name(GgufFile::parse(x.b.data(), x.b.size(), "built")); };
  // The embedding in f32, a layer's matrices mostly Q8_0 by bytes (102 against F16's 64).
  const std::vector<T> mixed = {{"token_embd.weight", 0, 64, 256}, {"blk.0.a.weight", 1, 32, 64},
                                {"blk.0.b.weight", 8, 32, 34}, {"blk.0.c.weight", 8, 64, 68}};
  auto file_type = [](uint32_t value_type, uint64_t value) {
    return [=](Builder& x) {
      x.s("general.file_type").v<uint32_t>(value_type);
      if (value_type == 4) x.v<uint32_t>(uint32_t(value));
      else if (value_type == 10) x.v<uint64_t>(value);
      else x.s("Q4_K_M");
    };
  };
  const auto none = [](Builder&) {};
  EXPECT_EQ(name_of(build(file_type(4, 15), 1, mixed)), "q4_k_m");
  EXPECT_EQ(name_of(build(file_type(4, 17), 1, mixed)), "q5_k_m");
  EXPECT_EQ(name_of(build(file_type(4, 32), 1, mixed)), "bf16");
  EXPECT_EQ(name_of(build(file_type(10, 7 | 1024), 1, mixed)), "q8_0");  // llama.cpp's "guessed" flag
  EXPECT_EQ(name_of(build(file_type(4, 0), 1, mixed)), "f32");
  // No key, an unknown or removed type, a string, an integer past int64: the layers' bytes decide.
  EXPECT_EQ(name_of(build(none, 0, mixed)), "q8_0");
  EXPECT_EQ(name_of(build(file_type(4, 99), 1, mixed)), "q8_0");
  EXPECT_EQ(name_of(build(file_type(4, 5), 1, mixed)), "q8_0");
  EXPECT_EQ(name_of(build(file_type(8, 0), 1, mixed)), "q8_0");
  EXPECT_EQ(name_of(build(file_type(10, ~uint64_t(0)), 1, mixed)), "q8_0");
  // Without layers, all the tensors; without tensors, nothing.
  EXPECT_EQ(name_of(build(none, 0, {{"a", 1, 32, 64}, {"b", 0, 32, 128}})), "f32");
  EXPECT_EQ(name_of(build(none, 0, {})), "");
}

}  // namespace
}  // namespace specscope

// The CLI: `info` describes a .gguf file through the reader; running one says plainly that GGUF models
// cannot be run yet (exit code 2), and a corrupt one is an error naming the file.
TEST(GgufCli, InfoReadsTheFileAndSaysWhetherItLoads) {
  const std::string file = specscope::test::fixture("gguf/all_types.gguf");
  auto info = specscope::test::run_cli("info --model " + file + " --json");
  ASSERT_EQ(info.exit_code, 0) << info.out;
  auto j = nlohmann::json::parse(info.out);
  EXPECT_EQ(j["gguf_version"], 3);
  EXPECT_EQ(j["name"], "SpecScope GGUF fixture");
  EXPECT_TRUE(j["tensor_types"].contains("Q4_K"));
  EXPECT_FALSE(j["loadable"].get<bool>());  // not a model: architecture "specscope-test"
  EXPECT_NE(j["load_problem"].get<std::string>().find("specscope-test"), std::string::npos) << info.out;
  auto run = specscope::test::run_cli("run --no-record --model " + file + " --prompt hi");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.out.find("unsupported architecture 'specscope-test'"), std::string::npos) << run.out;
  auto model = specscope::test::run_cli("info --json --model " + specscope::test::fixture("gguf_models/llama_spm_tied_f32.q8_0.gguf"));
  ASSERT_EQ(model.exit_code, 0) << model.out;
  EXPECT_TRUE(nlohmann::json::parse(model.out)["loadable"].get<bool>()) << model.out;
  EXPECT_EQ(nlohmann::json::parse(model.out)["file_type"], "q8_0") << model.out;
  auto kquant = specscope::test::run_cli("info --model " + specscope::test::fixture("gguf_kquant/tiny.q4_k_m.gguf"));
  ASSERT_EQ(kquant.exit_code, 0) << kquant.out;
  EXPECT_NE(kquant.out.find("file type      q4_k_m"), std::string::npos) << kquant.out;
  const std::string bad = ::testing::TempDir() + "/broken.gguf";
  FILE* f = std::fopen(bad.c_str(), "wb");
  std::fputs("GGUF\x03", f);
  std::fclose(f);
  auto broken = specscope::test::run_cli("info --model " + bad);
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.out.find("broken.gguf"), std::string::npos) << broken.out;
}
