// engine/formats/torch_checkpoint.h against files written by torch.save (tests/fixtures/torch, made by
// tests/fixtures/make_torch_checkpoints.py with expected values in expected.json), malformed and hostile files
// (bad/manifest.json: the substring each error must contain), and deterministic corruptions of a good file.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/formats/torch_checkpoint.h"
#include "engine/util/error.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return in ? json::parse(in) : json::object();
}

// dtype_name gives "f32", "bf16", ...; the JSON uses the safetensors spelling ("F32", "BF16", ...).
std::string dtype_str(DType t) {
  std::string s(dtype_name(t));
  for (auto& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void expect_values(const TensorView& t, const json& want) {
  const json& vals = want.at("values");
  ASSERT_EQ(int64_t(vals.size()), t.numel()) << t.name;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const json& w = vals[size_t(i)];
    switch (t.dtype) {
      case DType::I64: {
        int64_t v;
        std::memcpy(&v, static_cast<const uint8_t*>(t.data) + 8 * i, 8);
        EXPECT_EQ(v, w.get<int64_t>()) << t.name << "[" << i << "]";
        break;
      }
      case DType::I32: {
        int32_t v;
        std::memcpy(&v, static_cast<const uint8_t*>(t.data) + 4 * i, 4);
        EXPECT_EQ(v, w.get<int64_t>()) << t.name << "[" << i << "]";
        break;
      }
      case DType::U8:
        EXPECT_EQ(static_cast<const uint8_t*>(t.data)[i], w.get<int64_t>()) << t.name << "[" << i << "]";
        break;
      case DType::BOOL:
        EXPECT_EQ(static_cast<const uint8_t*>(t.data)[i] != 0, w.get<bool>()) << t.name << "[" << i << "]";
        break;
      default:  // f32/f16/bf16: exact (the JSON holds the stored values widened to float32)
        EXPECT_EQ(t.at(i), w.get<float>()) << t.name << "[" << i << "]";
    }
  }
}

class GoodCheckpoint : public ::testing::TestWithParam<std::string> {};

TEST_P(GoodCheckpoint, MatchesTorchSave) {
  const std::string file = GetParam();
  const json expected = read_json(test::fixture("torch/expected.json")).at(file);
  auto tensors = load_torch_checkpoint(MappedFile::open(test::fixture("torch/" + file)));
  ASSERT_EQ(tensors.size(), expected.size());
  for (const auto& [name, want] : expected.items()) {
    ASSERT_TRUE(tensors.count(name)) << "missing " << name;
    const TensorView& t = tensors.at(name);
    EXPECT_EQ(t.name, name);
    EXPECT_EQ(dtype_str(t.dtype), want.at("dtype").get<std::string>()) << name;
    EXPECT_EQ(t.shape, want.at("shape").get<std::vector<int64_t>>()) << name;
    EXPECT_TRUE(t.keep_alive) << name;
    expect_values(t, want);
  }
}

INSTANTIATE_TEST_SUITE_P(Files, GoodCheckpoint, ::testing::Values("state_dict.pt", "ordered.pt", "nested.pt", "zip64.pt"),
                         [](const auto& info) {
                           std::string n = info.param;
                           return n.substr(0, n.find('.'));
                         });

TEST(TorchCheckpoint, SliceSharesTheBaseStorage) {
  auto t = load_torch_checkpoint(MappedFile::open(test::fixture("torch/state_dict.pt")));
  const auto& base = t.at("base");
  const auto& slice = t.at("slice");
  EXPECT_EQ(slice.data, static_cast<const uint8_t*>(base.data) + 5 * sizeof(float));
  EXPECT_EQ(t.at("scalar").shape.size(), 0u);
  EXPECT_EQ(t.at("scalar").numel(), 1);
  EXPECT_EQ(t.at("empty").numel(), 0);
}

TEST(TorchCheckpoint, ViewsPointIntoTheMapping) {
  auto file = MappedFile::open(test::fixture("torch/state_dict.pt"));
  auto t = load_torch_checkpoint(file);
  for (const auto& [name, v] : t) {
    auto* p = static_cast<const uint8_t*>(v.data);
    EXPECT_GE(p, file->data()) << name;
    EXPECT_LE(p + v.nbytes(), file->data() + file->size()) << name;
  }
}

class BadCheckpoint : public ::testing::TestWithParam<std::string> {};

TEST_P(BadCheckpoint, RefusedWithAClearMessage) {
  const std::string file = GetParam();
  const std::string must = read_json(test::fixture("torch/bad/manifest.json")).at(file).get<std::string>();
  const std::string path = test::fixture("torch/bad/" + file);
  std::vector<uint8_t> bytes = read_bytes(path);
  try {
    parse_torch_checkpoint(bytes.data(), bytes.size(), path);
    FAIL() << file << " was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path);
    EXPECT_NE(std::string(e.what()).find(must), std::string::npos) << file << ": " << e.what();
  }
  if (!bytes.empty()) {  // the same through the mapped-file entry point
    EXPECT_THROW(load_torch_checkpoint(MappedFile::open(path)), InputError) << file;
  }
}

std::vector<std::string> bad_files() {
  std::vector<std::string> v;
  std::ifstream in(test::fixture("torch/bad/manifest.json"));
  if (!in) return {"missing_manifest"};
  const json m = json::parse(in);
  for (const auto& [k, _] : m.items()) v.push_back(k);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Files, BadCheckpoint, ::testing::ValuesIn(bad_files()), [](const auto& info) {
  std::string n = info.param;
  return n.substr(0, n.find('.'));
});

TEST(TorchCheckpoint, HostilePicklesAreNeverExecuted) {
  std::filesystem::remove("/tmp/specscope_pwned");
  for (const char* f : {"os_system.pt", "builtins_eval.pt"}) {
    EXPECT_THROW(load_torch_checkpoint(MappedFile::open(test::fixture(std::string("torch/bad/") + f))), InputError);
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/specscope_pwned"));
}

// Every prefix of a good file, and many single-byte corruptions of it: InputError or success, nothing else (the
// libFuzzer target fuzz/fuzz_torch_checkpoint.cpp does this at scale under AddressSanitizer).
TEST(TorchCheckpoint, TruncationsAndCorruptionsOnlyThrowInputError) {
  for (const char* f : {"state_dict.pt", "nested.pt"}) {
    const std::vector<uint8_t> good = read_bytes(test::fixture(std::string("torch/") + f));
    ASSERT_FALSE(good.empty());
    for (size_t n = 0; n < good.size(); ++n) {
      std::vector<uint8_t> cut(good.begin(), good.begin() + long(n));
      EXPECT_THROW(parse_torch_checkpoint(cut.data(), cut.size(), "cut"), InputError) << f << " cut at " << n;
    }
    std::mt19937 rng(7);
    for (int trial = 0; trial < 4000; ++trial) {
      std::vector<uint8_t> b = good;
      int flips = 1 + int(rng() % 3);
      for (int k = 0; k < flips; ++k) b[rng() % b.size()] = uint8_t(rng());
      try {
        auto t = parse_torch_checkpoint(b.data(), b.size(), "flip");
        for (const auto& [name, v] : t) {
          auto* p = static_cast<const uint8_t*>(v.data);
          ASSERT_TRUE(v.nbytes() == 0 || (p >= b.data() && p + v.nbytes() <= b.data() + b.size())) << name;
        }
      } catch (const InputError&) {
      }
    }
  }
}

}  // namespace
}  // namespace specscope
