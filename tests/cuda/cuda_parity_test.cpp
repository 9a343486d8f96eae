// The CUDA backend against the CPU backend (built whenever nvcc is present; every test is reported as SKIPPED
// when no CUDA device is visible — they are never counted as passes there):
//  - logits of every fixture model within bf16-level tolerance, prefill and decode;
//  - greedy 48-token outputs identical on the fixtures;
//  - the tree-mask property: a tree batch gives each row the logits of its own root path;
//  - KV compaction: keep() then decoding equals decoding the kept path from scratch;
//  - GGUF block weights (Q8_0, Q4_0/Q4_1/Q5_0/Q5_1, and llama.cpp's Q4_K_M / Q5_K_M files): panels dequantized
//    exactly on the GPU and multiplied in f32, so the logits match the CPU's to f32 accumulation order (1e-4).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/cpu/matmul.h"
#include "engine/generate/generator.h"
#include "engine/model/backend.h"
#include "engine/model/model.h"
#include "kernels/cuda_backend.h"
#include "kernels/cuda_context.h"
#include "tests/test_support.h"

using namespace specscope;

namespace {

// The CPU side of these parity tests is the exact path (weights dequantized, f32 products), which the GPU matches
// to f32 accumulation order; the CPU's default integer path for Q8_0/Q4_0/Q4_K/Q5_K/Q6_K has its own tests
// (quant_int8_test.cpp).
const bool kExactQuantPath = (cpu::set_quant_exact(true), true);

class CudaParity : public ::testing::Test {
 protected:
  void SetUp() override {
    cuda::register_backend();
    if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device visible: the CUDA backend is untested here";
  }
};

float max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float scale = 1e-6f, d = 0;
  for (size_t i = 0; i < a.size(); ++i) scale = std::max(scale, std::abs(a[i]));
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d / scale;
}

const char* kModels[] = {"models/llama_bytelevel_f32", "models/llama_bytelevel_bf16", "models/llama_spm_tied_f32",
                         "models/qwen2_bf16", "models/mistral_f32"};

std::vector<int32_t> prompt_for(const Model& m) {
  std::vector<int32_t> p;
  for (int i = 0; i < 24; ++i) p.push_back(int32_t((i * 37 + 11) % (m.config().vocab_size - 10)));
  return p;
}

}  // namespace

TEST_F(CudaParity, LogitsMatchTheCpuBackend) {
  for (const char* rel : kModels) {
    auto model = Model::load(test::fixture(rel));
    auto cpu = model->new_cpu_context(128);
    auto gpu = new_context(*model, Backend::Cuda, 128);
    ASSERT_EQ(gpu->backend_name(), "cuda");
    const auto prompt = prompt_for(*model);
    ForwardOutput a, b;
    cpu->forward(Batch::causal(prompt), a);
    gpu->forward(Batch::causal(prompt), b);
    // 16-bit weights multiply 16-bit activations on the GPU: bf16's 8-bit mantissa bounds the difference.
    EXPECT_LT(max_rel_diff(a.logits, b.logits), 2e-2f) << rel << " prefill";
    for (int step = 0; step < 8; ++step) {
      const int32_t t = int32_t((step * 101 + 7) % (model->config().vocab_size - 10));
      cpu->forward(Batch::causal(std::vector<int32_t>{t}), a);
      gpu->forward(Batch::causal(std::vector<int32_t>{t}), b);
      EXPECT_LT(max_rel_diff(a.logits, b.logits), 2e-2f) << rel << " decode step " << step;
    }
  }
}

TEST_F(CudaParity, GreedyOutputsAreIdentical) {
  for (const char* rel : kModels) {
    auto model = Model::load(test::fixture(rel));
    GenerateOptions opts;
    opts.max_tokens = 48;
    opts.stop_at_eos = false;
    auto cpu = model->new_cpu_context(128);
    auto gpu = new_context(*model, Backend::Cuda, 128);
    const auto prompt = prompt_for(*model);
    EXPECT_EQ(generate(*model, *cpu, prompt, opts).tokens, generate(*model, *gpu, prompt, opts).tokens) << rel;
  }
}

TEST_F(CudaParity, TreeRowsGetTheirRootPathsLogitsAndKeepCompacts) {
  auto model = Model::load(test::fixture("models/llama_bytelevel_f32"));
  const auto prompt = prompt_for(*model);
  auto gpu = new_context(*model, Backend::Cuda, 128);
  ForwardOutput o;
  gpu->forward(Batch::causal(prompt), o);
  // Root r with children a, b; c under a.
  Batch t;
  t.tokens = {5, 6, 7, 8};
  t.positions = {24, 25, 25, 26};
  t.mask = {1, 0, 0, 0, /**/ 1, 1, 0, 0, /**/ 1, 0, 1, 0, /**/ 1, 1, 0, 1};
  gpu->forward(t, o);
  // Reference: the path r, a, c causally on a fresh context, and r, b.
  auto ref = new_context(*model, Backend::Cuda, 128);
  ForwardOutput r;
  ref->forward(Batch::causal(prompt), r);
  ref->forward(Batch::causal(std::vector<int32_t>{5, 6, 8}), r);
  auto row = [](const ForwardOutput& f, int i) {
    return std::vector<float>(f.row_logits(i), f.row_logits(i) + f.vocab);
  };
  EXPECT_LT(max_rel_diff(row(r, 2), row(o, 3)), 1e-4f) << "c sees only r and a";
  EXPECT_LT(max_rel_diff(row(r, 1), row(o, 1)), 1e-4f);
  // keep(r, a, c): the cache now equals the causal path's; the next token's logits agree.
  gpu->keep(std::vector<int>{0, 1, 3});
  ASSERT_EQ(gpu->n_past(), 27);
  gpu->forward(Batch::causal(std::vector<int32_t>{9}), o);
  ref->forward(Batch::causal(std::vector<int32_t>{9}), r);
  EXPECT_LT(max_rel_diff(row(r, 0), row(o, 0)), 1e-4f);
}

// GGUF block weights stay blocks on the GPU: the logits of every quantized fixture match the CPU backend's to f32
// accumulation order (both dequantize exactly, kernels/quant_decode.h and gguf_quant.cpp), and greedy agrees.
TEST_F(CudaParity, QuantizedGgufFilesMatchTheCpuBackend) {
  for (const char* rel : {"gguf_models/llama_bytelevel_f32.q8_0.gguf", "gguf_models/llama_bytelevel_f32.q4_0.gguf",
                          "gguf_models/llama_spm_tied_f32.q4_1.gguf", "gguf_models/llama_spm_tied_f32.q5_0.gguf",
                          "gguf_models/llama_spm_tied_f32.q5_1.gguf", "gguf_kquant/tiny.q4_k_m.gguf",
                          "gguf_kquant/tiny.q5_k_m.gguf"}) {
    auto model = Model::load(test::fixture(rel));
    auto cpu = model->new_cpu_context(128);
    auto gpu = new_context(*model, Backend::Cuda, 128);
    const auto prompt = prompt_for(*model);
    ForwardOutput a, b;
    cpu->forward(Batch::causal(prompt), a);
    gpu->forward(Batch::causal(prompt), b);
    EXPECT_LT(max_rel_diff(a.logits, b.logits), 1e-4f) << rel << " prefill";
    for (int step = 0; step < 4; ++step) {
      const int32_t t = int32_t((step * 101 + 7) % (model->config().vocab_size - 10));
      cpu->forward(Batch::causal(std::vector<int32_t>{t}), a);
      gpu->forward(Batch::causal(std::vector<int32_t>{t}), b);
      EXPECT_LT(max_rel_diff(a.logits, b.logits), 1e-4f) << rel << " decode step " << step;
    }
    GenerateOptions opts;
    opts.max_tokens = 24;
    opts.stop_at_eos = false;
    auto c2 = model->new_cpu_context(128);
    auto g2 = new_context(*model, Backend::Cuda, 128);
    EXPECT_EQ(generate(*model, *c2, prompt, opts).tokens, generate(*model, *g2, prompt, opts).tokens) << rel;
  }
}
