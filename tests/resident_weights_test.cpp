// The CPU's copy of the weights in huge pages (engine/model/resident_weights.h): the setting and its names, what
// is copied (every matrix read in place, once, the tied LM head shared with the embedding; bf16 weights the dot
// kernel repacks are not), the memory it asks for in auto, and that a context reading the copy computes the bits a
// context reading the file's mapping does, for safetensors and GGUF files of every weight type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cpu/matmul.h"
#include "engine/cpu/kquant_lanes.h"
#include "engine/cpu/quant_int8.h"
#include "engine/model/model.h"
#include "engine/model/resident_weights.h"
#include "engine/util/huge_page_arena.h"
#include "runs/model_cache.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

// Sets the process-wide setting for one scope.
class WeightMemoryScope {
 public:
  explicit WeightMemoryScope(WeightMemory m) : before_(set_weight_memory(m)) {}
  ~WeightMemoryScope() { set_weight_memory(before_); }

 private:
  WeightMemory before_;
};

std::vector<float> logits_of(const Model& model) {
  auto ctx = model.new_cpu_context(64);
  ForwardOutput out;
  ctx->forward(Batch::causal(std::vector<int32_t>{5, 17, 9, 3, 11, 2}), out);
  std::vector<float> first = out.logits;
  const Batch next = Batch::causal(std::vector<int32_t>{7, 8, 1});  // a multi-token step on top of the cache
  ctx->forward(next, out);
  first.insert(first.end(), out.logits.begin(), out.logits.end());
  return first;
}

TEST(WeightMemory, NamesRoundTripAndBadNamesAreRefused) {
  for (WeightMemory m : {WeightMemory::Auto, WeightMemory::Copy, WeightMemory::Map})
    EXPECT_EQ(parse_weight_memory(weight_memory_name(m)), m);
  EXPECT_FALSE(parse_weight_memory("mmap"));
  EXPECT_FALSE(parse_weight_memory(""));
}

TEST(WeightMemory, TheCopyComputesTheMappingsBits) {
  const char* models[] = {"models/llama_bytelevel_f32",         "models/llama_bytelevel_bf16",
                          "models/qwen2_bf16",                  "models/llama_spm_tied_f32",
                          "gguf_models/llama_bytelevel_f32.f16.gguf", "gguf_models/llama_bytelevel_f32.q8_0.gguf",
                          "gguf_models/llama_bytelevel_f32.q4_0.gguf", "gguf_models/llama_spm_tied_f32.q5_1.gguf",
                          "gguf_kquant/tiny.q4_k_m.gguf",       "gguf_kquant/tiny.q5_k_m.gguf",
                          "gguf_lanes/tiny.q4_0.gguf"};
  for (const char* name : models) {
    SCOPED_TRACE(name);
    std::shared_ptr<const Model> mapped, copied;
    {
      WeightMemoryScope s(WeightMemory::Map);
      mapped = Model::load(test::fixture(name));
      EXPECT_EQ(mapped->resident_weights(), nullptr);
    }
    {
      WeightMemoryScope s(WeightMemory::Copy);
      copied = Model::load(test::fixture(name));
    }
    const std::vector<float> a = logits_of(*mapped), b = logits_of(*copied);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
    const auto resident = copied->resident_weights();
    if (resident_copy_bytes(copied->weights()) == 0) continue;  // every matrix repacked: nothing to copy
    ASSERT_NE(resident, nullptr);
    // The matrices the context read are the copy's: other memory than the mapping, advised as huge pages. Q4_K,
    // Q5_K and Q6_K ones, and Q4_0 and Q8_0 ones whose rows are whole units of 8 blocks, as their lanes copies
    // (kquant_lanes.h), `data` left to the mapping (the models/ fixtures' Q4_0 and Q8_0 rows are 64 or 128 long and
    // get none; gguf_lanes/tiny.q4_0.gguf's are 256 and 512, and every matrix gets one).
    const bool lanes = cpu::detail::kquant_lanes_enabled();
    int lanes_copies = 0;
    for_each_linear(*resident, [&](const TensorView& t) {
      const TensorView* loaded = nullptr;
      for_each_linear(copied->weights(), [&](const TensorView& u) { if (u.name == t.name) loaded = &u; });
      ASSERT_NE(loaded, nullptr) << t.name;
      if (cpu::tensor_takes_lanes(t.dtype, t.cols()) && lanes) {
        ++lanes_copies;
        EXPECT_EQ(t.data, loaded->data) << t.name;
        ASSERT_NE(t.lanes, nullptr) << t.name;
        EXPECT_TRUE(huge_page_state(t.lanes.get()).advised) << t.name;
        EXPECT_NE(0, std::memcmp(t.lanes.get(), t.data, t.nbytes())) << t.name << ": reordered";
      } else {
        EXPECT_EQ(t.lanes, nullptr) << t.name;
        if (t.dtype != DType::BF16) EXPECT_NE(t.data, loaded->data) << t.name;
        if (t.dtype != DType::BF16) EXPECT_TRUE(huge_page_state(t.data).advised) << t.name;
      }
    });
    if (std::string(name).find("_k_m") != std::string::npos && lanes) EXPECT_GT(lanes_copies, 0);
    if (std::string(name).find("gguf_lanes/") != std::string::npos && lanes) EXPECT_EQ(lanes_copies, 8);  // q, k, v, o, gate, up, down and the tied head
  }
}

TEST(WeightMemory, EachMatrixIsCopiedOnceAndTheTiedHeadSharesTheEmbeddingsCopy) {
  auto model = Model::load(test::fixture("gguf_models/llama_spm_tied_f32.q8_0.gguf"));
  const ModelWeights& w = model->weights();
  ASSERT_EQ(w.lm_head.data, w.embed.data);  // tied
  uint64_t expected = 0;
  for_each_linear(w, [&](const TensorView& t) { expected += t.nbytes(); });  // the head once, not the embedding
  EXPECT_EQ(resident_copy_bytes(w), expected);
  const auto copy = resident_copy(w, WeightMemory::Copy, std::nullopt, "test");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->lm_head.data, copy->embed.data);
  EXPECT_NE(copy->lm_head.data, w.lm_head.data);
  EXPECT_EQ(0, std::memcmp(copy->lm_head.data, w.lm_head.data, w.lm_head.nbytes()));
}

TEST(WeightMemory, Bf16WeightsTheDotKernelRepacksAreNotCopied) {
  auto model = Model::load(test::fixture("models/llama_bytelevel_bf16"));
  const ModelWeights& w = model->weights();
  uint64_t in_place = 0;
  for_each_linear(w, [&](const TensorView& t) {
    if (!cpu::bf16_weights_repacked(int(t.cols()))) in_place += t.nbytes();
  });
  EXPECT_EQ(resident_copy_bytes(w), in_place);
}

TEST(WeightMemory, AutoCopiesOnlyWhatFitsWithAGibibyteToSpare) {
  auto model = Model::load(test::fixture("models/llama_bytelevel_f32"));
  const ModelWeights& w = model->weights();
  const uint64_t bytes = resident_copy_bytes(w);
  ASSERT_GT(bytes, 0u);
  const uint64_t gib = uint64_t(1) << 30;
  EXPECT_EQ(resident_copy(w, WeightMemory::Auto, bytes + gib - 1, "test"), nullptr);
  EXPECT_NE(resident_copy(w, WeightMemory::Auto, bytes + gib, "test"), nullptr);
  EXPECT_NE(resident_copy(w, WeightMemory::Auto, std::nullopt, "test"), nullptr);  // unknown: copy
  EXPECT_NE(resident_copy(w, WeightMemory::Copy, 0, "test"), nullptr);               // copy: always
  EXPECT_EQ(resident_copy(w, WeightMemory::Map, std::nullopt, "test"), nullptr);
}

TEST(WeightMemory, OneCopyPerModelSharedByItsContexts) {
  WeightMemoryScope s(WeightMemory::Copy);
  auto model = Model::load(test::fixture("models/llama_bytelevel_f32"));
  const auto first = model->resident_weights();
  ASSERT_NE(first, nullptr);
  auto a = model->new_cpu_context(32), b = model->new_cpu_context(32);
  EXPECT_EQ(model->resident_weights(), first);
  // The contexts read the copy, not the mapping: zeroing the copy's LM head zeroes their logits.
  const TensorView& head = first->lm_head;
  std::memset(const_cast<void*>(head.data), 0, head.nbytes());
  ForwardOutput out;
  b->forward(Batch::causal(std::vector<int32_t>{5, 17, 9}), out);
  for (float v : out.logits) ASSERT_EQ(v, 0.0f);
}

// The run library makes the copy while it loads a model for the CPU, and reports it as the second half of the
// load's progress: one bar from 0 to the end, never going back.
TEST(WeightMemory, TheRunLibraryCopiesAtLoadAsTheSecondHalfOfItsProgress) {
  WeightMemoryScope s(WeightMemory::Copy);
  runs::ModelCache cache;
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  auto model = cache.get(test::fixture("gguf_models/llama_bytelevel_f32.q8_0.gguf"), {},
                         [&](const std::string&, uint64_t done, uint64_t total) { seen.emplace_back(done, total); },
                         Backend::Cpu);
  ASSERT_GE(seen.size(), 3u);
  const uint64_t total = seen.back().second;
  EXPECT_EQ(seen.back().first, total);
  bool second_half = false;
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].second, total);
    if (i) EXPECT_GE(seen[i].first, seen[i - 1].first);
    second_half |= seen[i].first > total / 2 && seen[i].first < total;
  }
  EXPECT_TRUE(second_half || seen[seen.size() - 2].first == total / 2);  // small copies go in one slice
  EXPECT_NE(model->resident_weights(), nullptr);
}

TEST(WeightMemory, TheCliRefusesABadSettingInOneLine) {
  const auto r = test::run_cli("info --weights-memory mmap");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--weights-memory"), std::string::npos);
  EXPECT_NE(r.out.find("auto, copy or map"), std::string::npos);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
}

}  // namespace
}  // namespace specscope
