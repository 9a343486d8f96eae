// Batch invariance, which losslessness rests on: a row's logits are bit-identical whether it is forwarded alone
// or among 2-64 draft-tree rows, on every kernel path this CPU has (scalar, AVX2, AVX-512) and every weight type
// of the fixtures (f32, bf16, f16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K), for the exact and the integer
// paths of block weights. Verification compares the target's choice at each tree node with the drafted token;
// if a node's logits changed with the size of the tree around it, greedy speculative output could differ from
// vanilla's.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>

#include "engine/cpu/matmul.h"
#include "engine/model/model.h"
#include "engine/util/dtype.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

struct Case {
  std::string model;  // under tests/fixtures
  bool quant_exact;   // block weights: the exact path (true) or integer dot products
};

std::string name_of(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.model + (info.param.quant_exact ? "_exact" : "");
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

class BatchInvariance : public ::testing::TestWithParam<Case> {};

// The kernel level: linear()'s row 0 alone and among n rows, for f32/f16/bf16 weights and k on both sides of
// the k-blocking threshold and of the bf16 one-row kernel's (rows of 4 KB or more, matmul_bf16dot.cpp), with a k tail,
// odd numbers of vectors (21, 48, 2064) and short last k blocks (4112: 16 wide; 6000: 1904).
TEST(BatchInvarianceLinear, RowZeroIsBitIdenticalForAnyTokenCount) {
  const cpu::BatchVariantKernels no_variant(false);  // as in every forward after a sequence's first
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (int k : {21, 48, 64, 96, 384, 1000, 2048, 2064, 2081, 4112, 6000, 8192}) {
      const int m = 37;
      std::vector<float> wf(size_t(m) * k);
      for (auto& x : wf) x = u(rng);
      std::vector<uint16_t> wh(wf.size());
      for (size_t i = 0; i < wf.size(); ++i) wh[i] = dt == DType::F16 ? f32_to_f16(wf[i]) : f32_to_bf16(wf[i]);
      TensorView W;
      W.name = "w";
      W.dtype = dt;
      W.shape = {m, k};
      W.data = dt == DType::F32 ? static_cast<const void*>(wf.data()) : static_cast<const void*>(wh.data());
      std::vector<float> X(size_t(64) * k);
      for (auto& x : X) x = u(rng);
      // bf16 weights with an owner, as a model's are: narrower than 2048 they are packed into panels for the
      // vdpbf16ps kernel (AVX512-BF16) and the AVX2 widening kernel (bf16_panels.h).
      for (bool owned : {false, true}) {
        if (owned && dt != DType::BF16) continue;
        W.keep_alive = owned ? std::make_shared<int>(0) : nullptr;
        // With the bf16 dot kernel off too: AVX-512 then widens the panels as CPUs without AVX512-BF16 do; and on
        // AMX CPUs with the tiles off (the bf16 dot kernel then computes the panels).
        for (int mode : {0, 1, 2}) {
          const bool dot = mode < 2, amx = mode == 0;
          if (!dot && !owned) continue;
          cpu::set_bf16_dot(dot);
          cpu::set_amx(amx);
          for (cpu::Isa isa : {cpu::Isa::Scalar, cpu::Isa::Avx2, cpu::Isa::Avx512}) {
            if (!cpu::isa_supported(isa)) continue;
            cpu::set_isa(isa);
            std::vector<float> y1(static_cast<size_t>(m)), yn(static_cast<size_t>(64 * m));
            cpu::linear(X.data(), 1, W, nullptr, y1.data());
            for (int n : {2, 4, 5, 6, 7, 8, 9, 13, 16, 33, 64}) {
              cpu::linear(X.data(), n, W, nullptr, yn.data());
              EXPECT_EQ(std::memcmp(yn.data(), y1.data(), sizeof(float) * size_t(m)), 0)
                  << dtype_name(dt) << " k " << k << " n " << n << " " << cpu::active_isa() << (owned ? " owned" : "")
                  << (dot ? "" : " no bf16 dot") << (amx ? "" : " no amx");
            }
          }
          cpu::set_isa(cpu::Isa::Auto);
        }
        cpu::set_bf16_dot(true);
        cpu::set_amx(true);
      }
    }
}

// Row 0 is the root (the last committed token); the other rows form a random tree under it.
Batch tree_batch(int32_t root, int n, int base, int vocab, std::mt19937& rng) {
  Batch b;
  std::vector<int> parent(size_t(n), -1), depth(size_t(n), 0);
  b.mask.assign(size_t(n) * n, 0);
  for (int i = 0; i < n; ++i) {
    b.tokens.push_back(i == 0 ? root : int32_t(rng() % uint32_t(vocab)));
    if (i > 0) {
      parent[size_t(i)] = int(rng() % uint32_t(i));
      depth[size_t(i)] = depth[size_t(parent[size_t(i)])] + 1;
    }
    b.positions.push_back(base + depth[size_t(i)]);
    for (int a = i; a >= 0; a = parent[size_t(a)]) b.mask[size_t(i) * n + a] = 1;
  }
  return b;
}

TEST_P(BatchInvariance, RootLogitsAreBitIdenticalAloneAndInTreesOfAnySize) {
  const Case c = GetParam();
  const bool old_exact = cpu::set_quant_exact(c.quant_exact);
  auto model = Model::load(test::fixture(c.model));
  const int V = model->config().vocab_size;
  std::mt19937 rng(77);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 7; ++i) prompt.push_back(int32_t(rng() % uint32_t(V)));
  const int32_t root = int32_t(rng() % uint32_t(V)), child = int32_t(rng() % uint32_t(V));

  for (cpu::Isa isa : {cpu::Isa::Scalar, cpu::Isa::Avx2, cpu::Isa::Avx512}) {
    if (!cpu::isa_supported(isa)) continue;
    cpu::set_isa(isa);
    SCOPED_TRACE(cpu::active_isa());
    auto ctx = model->new_cpu_context(128);
    ForwardOutput out;
    ctx->forward(Batch::causal(prompt), out);
    const int base = ctx->n_past();
    // Alone: the root, then the root with one child.
    ForwardOutput alone, pair;
    ctx->forward(Batch::causal(std::vector<int32_t>{root}), alone);
    ctx->truncate(base);
    ctx->forward(Batch::causal(std::vector<int32_t>{root, child}), pair);
    ctx->truncate(base);
    for (int n : {2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 32, 33, 64}) {
      Batch b = tree_batch(root, n, base, V, rng);
      b.tokens[1] = child;  // row 1 is always a child of the root (tree_batch gives row 1 no other parent)
      ForwardOutput tree;
      ctx->forward(b, tree);
      ctx->truncate(base);
      EXPECT_EQ(std::memcmp(tree.row_logits(0), alone.row_logits(0), sizeof(float) * size_t(V)), 0)
          << "root among " << n << " rows";
      EXPECT_EQ(std::memcmp(tree.row_logits(1), pair.row_logits(1), sizeof(float) * size_t(V)), 0)
          << "depth-1 node among " << n << " rows";
    }
  }
  cpu::set_isa(cpu::Isa::Auto);
  cpu::set_quant_exact(old_exact);
}

// Block-quantized weights (and a bf16 model) on their default path and on the exact path (SPECSCOPE_QUANT_EXACT=1), whose fused
// and row-group kernels are kept to a sequence's first forward.
INSTANTIATE_TEST_SUITE_P(
    Fixtures, BatchInvariance,
    ::testing::Values(Case{"models/llama_bytelevel_f32", true}, Case{"models/llama_bytelevel_bf16", true},
                      Case{"models/llama_bytelevel_bf16", false},  // bf16 panels: vdpbf16ps, or AVX2 widening
                      Case{"models/qwen2_bf16", true}, Case{"models/qwen3_bf16", true}, Case{"models/gemma3_bf16", true},
                      Case{"gguf_models/mistral_f32.f16.gguf", true},
                      Case{"gguf_models/llama_bytelevel_f32.q8_0.gguf", false},
                      Case{"gguf_models/llama_bytelevel_f32.q8_0.gguf", true},
                      Case{"gguf_models/llama_bytelevel_f32.q4_0.gguf", false},
                      Case{"gguf_models/llama_bytelevel_f32.q4_0.gguf", true},
                      Case{"gguf_models/llama_spm_tied_f32.q4_1.gguf", false},
                      Case{"gguf_models/llama_spm_tied_f32.q4_1.gguf", true},
                      Case{"gguf_models/llama_spm_tied_f32.q5_0.gguf", false},
                      Case{"gguf_models/llama_spm_tied_f32.q5_0.gguf", true},
                      Case{"gguf_models/llama_spm_tied_f32.q5_1.gguf", false},
                      Case{"gguf_models/llama_spm_tied_f32.q5_1.gguf", true},
                      Case{"gguf_kquant/tiny.q4_k_m.gguf", false}, Case{"gguf_kquant/tiny.q4_k_m.gguf", true},
                      Case{"gguf_kquant/tiny.q5_k_m.gguf", false}, Case{"gguf_kquant/tiny.q5_k_m.gguf", true},
                      // Mixtures of experts: each expert computes the rows routed to it, so a row is multiplied among
                      // however many other rows took the same expert.
                      Case{"models/qwen3moe_mixed_f32", true}, Case{"gguf_models/qwen3moe_f32.q8_0.gguf", false},
                      Case{"gguf_models/mixtral_f32.q4_0.gguf", false}, Case{"gguf_models/mixtral_f32.q4_0.gguf", true},
                      // Qwen2-MoE's shared expert runs on every row at once.
                      Case{"models/qwen2moe_f32", true}, Case{"gguf_models/qwen2moe_f32.q8_0.gguf", false},
                      // GPT-OSS: sinks in every attention row, biased experts, and MXFP4 experts read as Q5_0.
                      Case{"models/gpt_oss_f32", true}, Case{"models/gpt_oss_mxfp4", false},
                      Case{"gguf_models/gpt_oss_f32.mxfp4.gguf", false},
                      Case{"gguf_models/gpt_oss_f32.mxfp4.gguf", true},
                      // DeepSeek's latent attention: every head's absorbed query against the one latent key head, and
                      // each head's k_b and v_b products over all the rows at once; sigmoid routing with groups (V3).
                      Case{"models/deepseek_v2_f32", true}, Case{"models/deepseek_v3_f32", false},
                      Case{"gguf_models/deepseek_v2_f32.q8_0.gguf", false},
                      Case{"gguf_models/deepseek_v3_f32.q8_0.gguf", true},
                      // OLMo: no pre-norms (the projections read the residual stream), q and k normed over all heads.
                      Case{"models/olmo3_f32", true}, Case{"gguf_models/olmo2_f32.q8_0.gguf", false},
                      // SmolLM3: a layer whose keys are cached unrotated.
                      Case{"gguf_models/smollm3_f32.q8_0.gguf", false}),
    name_of);

}  // namespace
}  // namespace specscope
