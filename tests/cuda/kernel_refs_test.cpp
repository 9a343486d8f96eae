// The CPU references of the CUDA kernels (kernels/kernel_refs.h), checked on the CPU, GPU or not, so that when
// cuda_kernels_test.cpp finds a kernel and its reference apart on a GPU, the kernel is the suspect:
//  - attention: the engine's cpu::attention behind the launcher's visibility rule and KV layout, against the
//    definition written out in double over each row's own slots (earlier ones within the window, its tree path);
//  - RoPE at each row's position: the rotation the CPU forward applies (cpu::RopeTable), bit for bit;
//  - dequantization, embedding and f16/bf16 rounding: the engine's dequantizer against the block decoder the GPU
//    runs (kernels/quant_decode.h), bit for bit, and round-to-nearest-even on the awkward values;
//  - the row-wise and element-wise references against their one-line definitions;
//  - the logit summary (greedy verification's reads of a row) against the softmax in double and the definition's
//    order (larger logit first, ties to the lower id);
//  - the mixture-of-experts references: the routing against its definition, and all of them composed in
//    kernels/cuda_experts.cpp's order over a fixture's stacked experts against the CPU backend's way (cpu_moe.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <tuple>

#include "engine/cpu/matmul.h"
#include "engine/cpu/matmul_quant.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/rope_table.h"
#include "engine/model/expert_routing.h"
#include "engine/model/model.h"
#include "engine/sampling/sampler.h"
#include "engine/util/half_float.h"
#include "kernels/kernel_refs.h"
#include "tests/cuda/kernel_test_data.h"
#include "tests/test_support.h"

using namespace specscope;
using namespace specscope::kernel_test;

namespace {

// Attention from its definition, in double: row i, head h attends to the earlier slots within the window and to
// the new rows on its path from the root (itself and its ancestors), with softmax weights of q.k / sqrt(hd), each
// score first capped to cap * tanh(score / cap) when the case has a soft cap (Gemma 2).
std::vector<float> attention_by_definition(const AttentionCase& c) {
  const int kv_dim = c.nkv * c.hd, group = c.nh / c.nkv;
  std::vector<float> out(size_t(c.n) * c.nh * c.hd, 0.f);
  for (int i = 0; i < c.n; ++i) {
    std::vector<int> slots;
    for (int j = 0; j < c.base; ++j) slots.push_back(j);
    for (int a = i; a >= 0; a = c.parent[a]) slots.push_back(c.base + a);
    if (c.window > 0)
      std::erase_if(slots, [&](int j) { return c.positions[i] - c.slot_pos[j] >= c.window; });
    for (int h = 0; h < c.nh; ++h) {
      const float* q = c.q.data() + (size_t(i) * c.nh + h) * c.hd;
      const size_t kv = size_t(h / group) * c.hd;
      std::vector<double> s;
      double mx = -1e300, sum = 0;
      for (int j : slots) {
        double d = 0;
        for (int e = 0; e < c.hd; ++e) d += double(q[e]) * c.k[size_t(j) * kv_dim + kv + e];
        d /= std::sqrt(double(c.hd));
        if (c.soft_cap > 0.f) d = c.soft_cap * std::tanh(d / c.soft_cap);
        s.push_back(d);
        mx = std::max(mx, s.back());
      }
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int e = 0; e < c.hd; ++e) {
        double acc = 0;
        for (size_t t = 0; t < slots.size(); ++t) acc += s[t] / sum * c.v[size_t(slots[t]) * kv_dim + kv + e];
        out[(size_t(i) * c.nh + h) * c.hd + e] = float(acc);
      }
    }
  }
  return out;
}

std::vector<float> attention_ref(const AttentionCase& c) {
  std::vector<float> out(size_t(c.n) * c.nh * c.hd);
  cuda::ref::attention(c.q.data(), c.k.data(), c.v.data(), c.slot_pos.data(),
                       c.mask.empty() ? nullptr : c.mask.data(), c.positions.data(), c.n, c.base, c.nh, c.nkv, c.hd,
                       c.window, c.soft_cap, out.data());
  return out;
}

}  // namespace

TEST(KernelRefs, AttentionIsTheSoftmaxOverEachRowsVisibleSlots) {
  struct Case {
    int hd, base, n;
    bool tree;
    int window;
  };
  // Llama's head sizes and its 4 query heads per KV head; causal prefill, decode, trees, a sliding window that
  // cuts into the earlier slots and into the tree.
  const Case cases[] = {{64, 0, 16, false, 0},  {64, 37, 1, false, 0},  {64, 300, 16, true, 0},
                        {128, 300, 9, true, 0}, {128, 200, 16, true, 64}, {64, 0, 12, false, 5}};
  uint32_t seed = 1;
  for (const Case& k : cases) {
    const AttentionCase c = attention_case(8, 2, k.hd, k.base, k.n, k.tree, k.window, seed += 10);
    EXPECT_LT(max_rel_diff(attention_ref(c), attention_by_definition(c)), 1e-5)
        << "hd " << k.hd << " base " << k.base << " n " << k.n << (k.tree ? " tree" : " causal") << " window "
        << k.window;
  }
}

TEST(KernelRefs, AttentionWithASoftCapIsTheSoftmaxOfTheCappedScores) {
  // Gemma 2's attn_logit_softcapping, at a cap of 2 so that it moves scores of a few units (the cases' q.k / sqrt(hd)
  // spread about 3): the reference (the engine's cpu::attention) against the definition, and far from the uncapped
  // output, so a reference that dropped the cap would fail.
  uint32_t seed = 300;
  for (const bool tree : {false, true}) {
    AttentionCase c = attention_case(8, 2, 64, 150, 16, tree, tree ? 0 : 40, seed += 10);
    const std::vector<float> uncapped = attention_ref(c);
    c.soft_cap = 2.f;
    const std::vector<float> capped = attention_ref(c);
    EXPECT_LT(max_rel_diff(capped, attention_by_definition(c)), 1e-5) << (tree ? "tree" : "causal, window 40");
    EXPECT_GT(max_rel_diff(capped, uncapped), 0.1) << "the cap changed nothing";
  }
}

TEST(KernelRefs, ExpertGroupsHoldEveryPickOnceInRunsOfOneExpert) {
  // group_expert_picks' reference: `order` is every pick once, sorted by expert and within an expert by pick; the groups
  // come in expert order, each an expert's next run of at most 8 of its picks (every run but its last full), end to
  // end over `order`; the groups past them are empty, and there are never more than expert_groups_bound.
  std::mt19937 rng(77);
  for (const auto& [experts, picks] : {std::pair{8, 1}, std::pair{8, 66}, std::pair{128, 56}, std::pair{128, 8200},
                                       std::pair{60, 17}}) {
    std::uniform_int_distribution<int32_t> pick_expert(0, experts - 1);
    std::vector<int32_t> ids(static_cast<size_t>(picks));
    for (auto& e : ids) e = experts == 128 ? pick_expert(rng) % 19 : pick_expert(rng);  // some experts left unpicked
    const int bound = cuda::expert_groups_bound(picks, experts);
    std::vector<int32_t> order(ids.size(), -1);
    std::vector<cuda::ExpertGroup> groups(static_cast<size_t>(bound), cuda::ExpertGroup{-1, -1, -1});
    cuda::ref::group_expert_picks(ids.data(), picks, experts, order.data(), groups.data());
    const std::string what = std::to_string(experts) + " experts, " + std::to_string(picks) + " picks";
    std::vector<int32_t> want(ids.size());
    std::iota(want.begin(), want.end(), 0);
    std::stable_sort(want.begin(), want.end(), [&](int32_t a, int32_t b) { return ids[size_t(a)] < ids[size_t(b)]; });
    EXPECT_EQ(order, want) << what;
    int at = 0, g = 0;
    for (int e = 0; e < experts; ++e) {
      const int count = int(std::count(ids.begin(), ids.end(), e));
      for (int i = 0; i < count; i += cuda::kExpertGroupPicks, ++g) {
        ASSERT_LT(g, bound) << what;
        const cuda::ExpertGroup& x = groups[size_t(g)];
        EXPECT_EQ(x.expert, e) << what << ", group " << g;
        EXPECT_EQ(x.first, at + i) << what << ", group " << g;
        EXPECT_EQ(x.count, std::min(cuda::kExpertGroupPicks, count - i)) << what << ", group " << g;
      }
      at += count;
    }
    for (; g < bound; ++g) EXPECT_EQ(groups[size_t(g)].count, 0) << what << ", group " << g << " past the last";
  }
}

TEST(KernelRefs, ExpertRoutingIsTheTopKOfTheSoftmaxInExpertOrder) {
  // Per row: k distinct experts in increasing order, exactly the k most probable by the softmax in double (a tie
  // between two drawn logits is not expected at these sizes), weighted by their probabilities, renormalized when
  // asked; the logits left holding the softmax.
  for (const auto& [experts, k, normalize] : {std::tuple{8, 2, true}, std::tuple{128, 8, true}, std::tuple{60, 4, false}}) {
    const int rows = 9;
    std::vector<float> logits = uniform(size_t(rows) * experts, -4.f, 4.f, uint32_t(experts + k));
    const std::vector<float> original = logits;
    std::vector<int32_t> ids(size_t(rows) * k);
    std::vector<float> weights(ids.size());
    cuda::ref::route_experts(logits.data(), rows, experts, k, normalize, ids.data(), weights.data());
    for (int r = 0; r < rows; ++r) {
      const float* x = original.data() + size_t(r) * experts;
      double mx = -1e300, sum = 0;
      for (int e = 0; e < experts; ++e) mx = std::max(mx, double(x[e]));
      std::vector<double> p(static_cast<size_t>(experts));
      for (int e = 0; e < experts; ++e) sum += p[e] = std::exp(x[e] - mx);
      for (double& v : p) v /= sum;
      std::vector<int> order(static_cast<size_t>(experts));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
      std::vector<int> want(order.begin(), order.begin() + k);
      std::sort(want.begin(), want.end());
      double chosen = 0;
      for (int e : want) chosen += p[e];
      for (int j = 0; j < k; ++j) {
        const size_t at = size_t(r) * k + j;
        ASSERT_EQ(ids[at], want[j]) << experts << " experts, row " << r << " pick " << j;
        EXPECT_NEAR(weights[at], p[want[j]] / (normalize ? chosen : 1.0), 1e-6) << experts << " experts, row " << r;
      }
      for (int e = 0; e < experts; ++e) EXPECT_NEAR(logits[size_t(r) * experts + e], p[e], 1e-6);
    }
  }
}

namespace {

DType wtype_dtype(cuda::WType t) {
  switch (t) {
    case cuda::WType::Q8_0: return DType::Q8_0;
    case cuda::WType::Q4_0: return DType::Q4_0;
    case cuda::WType::Q4_1: return DType::Q4_1;
    case cuda::WType::Q5_0: return DType::Q5_0;
    case cuda::WType::Q5_1: return DType::Q5_1;
    case cuda::WType::Q4_K: return DType::Q4_K;
    case cuda::WType::Q5_K: return DType::Q5_K;
    case cuda::WType::Q6_K: return DType::Q6_K;
    default: throw std::invalid_argument("not a block type");
  }
}

cuda::WType wtype_of(DType t) {
  switch (t) {
    case DType::F32: return cuda::WType::F32;
    case DType::F16: return cuda::WType::F16;
    case DType::BF16: return cuda::WType::BF16;
    case DType::Q8_0: return cuda::WType::Q8_0;
    case DType::Q4_0: return cuda::WType::Q4_0;
    default: throw std::invalid_argument("a weight type this test does not map");
  }
}

// An f32 copy of a weight matrix (the engine's dequantizer for blocks): the CPU way below multiplies by these, since
// the CPU backend's block products round their activations to 8 bits, where the references (and the GPU) do not.
TensorView widened(const TensorView& t, std::vector<std::vector<float>>& keep) {
  if (t.dtype == DType::F32) return t;
  keep.emplace_back(size_t(t.rows()) * size_t(t.cols()));
  cpu::dequantize_rows(t, 0, t.rows(), keep.back().data());
  TensorView w = t;
  w.dtype = DType::F32;
  w.data = keep.back().data();
  w.keep_alive.reset();
  return w;
}

// One matrix of every expert, one after another (DeviceModel::bind_experts's upload).
std::vector<uint8_t> stacked(const std::vector<ExpertWeights>& experts, TensorView ExpertWeights::* part) {
  std::vector<uint8_t> out;
  for (const ExpertWeights& e : experts) {
    const auto* p = static_cast<const uint8_t*>((e.*part).data);
    out.insert(out.end(), p, p + (e.*part).nbytes());
  }
  return out;
}

}  // namespace

TEST(KernelRefs, ExpertReferencesComposeToTheCpuMixtureOfExperts) {
  // A fixture's first expert layer on 5 rows, two ways: the CPU backend's (cpu_moe.cpp: ExpertRouting, each chosen
  // expert's products, the outputs added in expert order, then the shared expert times sigmoid of its gate), and the
  // references in kernels/cuda_experts.cpp's order over the experts stacked as the device model uploads them (the
  // down products reading each pick's own input by the pick stride). Qwen2-MoE with its shared expert and Qwen3-MoE,
  // from the Q8_0 GGUF files the GPU bundle carries (block rows: the stride between stacked experts is in blocks).
  for (const char* rel : {"gguf_models/qwen2moe_f32.q8_0.gguf", "gguf_models/qwen3moe_f32.q8_0.gguf"}) {
    auto model = Model::load(test::fixture(rel));
    const ModelConfig& c = model->config();
    int layer = 0;
    while (!c.moe_layer(layer)) ++layer;
    const LayerWeights& L = model->weights().layers[size_t(layer)];
    const int rows = 5, H = c.hidden_size, E = c.num_experts, k = c.experts_per_token, F = c.expert_ffn;
    const std::vector<float> h = uniform(size_t(rows) * H, -1.f, 1.f, 77);
    std::vector<float> router(size_t(rows) * E);
    cpu::linear(h.data(), rows, L.router, nullptr, router.data());

    std::vector<float> want(size_t(rows) * H, 0.f), probs = router;
    ExpertRouting routing;
    routing.route(probs.data(), rows, E, k, c.norm_topk_prob);
    std::vector<float> g(static_cast<size_t>(F)), u(g.size()), y(static_cast<size_t>(H));
    for (int e = 0; e < E; ++e)
      for (const ExpertRoute* r = routing.begin(e); r != routing.end(e); ++r) {
        const ExpertWeights& X = L.experts[size_t(e)];
        std::vector<std::vector<float>> keep;
        const float* x = h.data() + size_t(r->row) * H;
        cpu::linear(x, 1, widened(X.gate, keep), nullptr, g.data());
        cpu::linear(x, 1, widened(X.up, keep), nullptr, u.data());
        cpu::silu_mul(g.data(), u.data(), g.data(), F);
        cpu::linear(g.data(), 1, widened(X.down, keep), nullptr, y.data());
        cpu::axpy(r->weight, y.data(), want.data() + size_t(r->row) * H, H);
      }
    const int S = c.shared_expert_ffn;
    std::vector<float> sg(size_t(rows) * S), su(sg.size()), shared(size_t(rows) * H), scales(static_cast<size_t>(rows));
    if (L.has_shared_expert()) {
      cpu::linear(h.data(), rows, L.shared_expert.gate, nullptr, sg.data());
      cpu::linear(h.data(), rows, L.shared_expert.up, nullptr, su.data());
      cpu::silu_mul(sg.data(), su.data(), sg.data(), int64_t(rows) * S);
      cpu::linear(sg.data(), rows, L.shared_expert.down, nullptr, shared.data());
      for (int r = 0; r < rows; ++r) {
        const float s = 1.f / (1.f + std::exp(-cpu::dot(L.shared_expert_gate.data(), h.data() + size_t(r) * H, H)));
        cpu::axpy(s, shared.data() + size_t(r) * H, want.data() + size_t(r) * H, H);
      }
    }

    const cuda::WType gt = wtype_of(L.experts[0].gate.dtype), ut = wtype_of(L.experts[0].up.dtype),
                      dt = wtype_of(L.experts[0].down.dtype);
    const std::vector<uint8_t> gates = stacked(L.experts, &ExpertWeights::gate),
                               ups = stacked(L.experts, &ExpertWeights::up),
                               downs = stacked(L.experts, &ExpertWeights::down);
    std::vector<int32_t> ids(size_t(rows) * k);
    std::vector<float> weights(ids.size()), pg(ids.size() * F), pu(pg.size()), outs(ids.size() * H);
    std::vector<float> got(size_t(rows) * H), logits = router;
    cuda::ref::route_experts(logits.data(), rows, E, k, c.norm_topk_prob, ids.data(), weights.data());
    cuda::ref::expert_products(gates.data(), gt, F, H, ids.data(), rows, k, h.data(), H, 0, pg.data());
    cuda::ref::expert_products(ups.data(), ut, F, H, ids.data(), rows, k, h.data(), H, 0, pu.data());
    cuda::ref::silu_mul(pg.data(), pu.data(), pg.data(), int64_t(pg.size()));
    cuda::ref::expert_products(downs.data(), dt, H, F, ids.data(), rows, k, pg.data(), int64_t(k) * F, F, outs.data());
    if (L.has_shared_expert())
      cuda::ref::shared_expert_scales(L.shared_expert_gate.data(), h.data(), rows, H, scales.data());
    cuda::ref::sum_expert_outputs(outs.data(), weights.data(), rows, k, H,
                                  L.has_shared_expert() ? shared.data() : nullptr, scales.data(), got.data());
    EXPECT_LT(max_rel_diff(got, want), 1e-5) << rel;
    EXPECT_GT(routing.experts_hit(), k) << rel << ": the rows should not all pick the same experts";
  }
}

TEST(KernelRefs, AttentionGivesZerosToARowThatSeesNothing) {
  AttentionCase c = attention_case(8, 2, 64, 0, 4, true, 0, 7);
  std::fill(c.mask.begin() + 2 * 4, c.mask.begin() + 3 * 4, 0);  // row 2 sees no slot at all
  const std::vector<float> out = attention_ref(c);
  for (int e = 0; e < c.nh * c.hd; ++e) ASSERT_EQ(out[size_t(2) * c.nh * c.hd + e], 0.f) << e;
  EXPECT_NE(out[0], 0.f);
}

TEST(KernelRefs, RopeAtEachRowsPositionIsTheForwardsRope) {
  for (const Shape& s : kShapes) {
    const std::vector<float> freq = inv_freq(s.head_dim);
    const int rows = 24;
    const std::vector<int32_t> pos = [&] {
      std::vector<int32_t> p;
      for (int r = 0; r < rows; ++r) p.push_back(int32_t((r * 977 + 13) % 8192));  // tree-like: out of order
      return p;
    }();
    std::vector<float> v = uniform(size_t(rows) * s.heads * s.head_dim, -2.f, 2.f, 3), forward = v;
    cuda::ref::rope(v.data(), rows, s.heads, s.head_dim, pos.data(), freq.data());
    cpu::RopeTable table(freq, s.head_dim);
    for (int r = 0; r < rows; ++r) table.apply(forward.data() + size_t(r) * s.heads * s.head_dim, s.heads, pos[r]);
    const BitDiff d = bit_diff(v, forward);
    EXPECT_EQ(d.count, 0u) << s.name << ": first at " << d.first;
  }
}

TEST(KernelRefs, DequantAndEmbedMatchTheDeviceDecoderBitForBit) {
  const int rows = 12, cols = 512;
  const std::vector<int32_t> tokens = {11, 0, 5, 5, 3};
  for (WType t : kAllTypes) {
    const std::vector<uint8_t> w = random_rows(t, rows, cols, 100 + int(t));
    const size_t rb = row_bytes(t, cols);
    // What the GPU computes for element i of stored row r (kernels/dequant.cu), on the host.
    auto device_decode = [&](int r, int i) -> float {
      const uint8_t* row = w.data() + size_t(r) * rb;
      if (cuda::is_block(t)) return quant_decode::element(row, block_of(t), i);
      uint16_t h;
      std::memcpy(&h, row + 2 * size_t(i), 2);
      if (t == WType::F16) return half_bits_to_float(h);
      if (t == WType::BF16) return bf16_to_f32(h);
      float f;
      std::memcpy(&f, row + 4 * size_t(i), 4);
      return f;
    };
    std::vector<float> got(tokens.size() * cols), want(got.size());
    cuda::ref::embed_gather(w.data(), t, tokens.data(), int(tokens.size()), cols, got.data());
    for (size_t k = 0; k < tokens.size(); ++k)
      for (int i = 0; i < cols; ++i) want[k * cols + i] = device_decode(tokens[k], i);
    BitDiff d = bit_diff(got, want);
    EXPECT_EQ(d.count, 0u) << "embed_gather " << type_name(t) << ": first at " << d.first;
    if (!cuda::is_block(t)) continue;
    const int row0 = 3, nrows = 7;
    got.assign(size_t(nrows) * cols, 0.f), want.assign(got.size(), 0.f);
    cuda::ref::dequant_rows(w.data(), t, cols, row0, nrows, got.data());
    for (int r = 0; r < nrows; ++r)
      for (int i = 0; i < cols; ++i) want[size_t(r) * cols + i] = device_decode(row0 + r, i);
    d = bit_diff(got, want);
    EXPECT_EQ(d.count, 0u) << "dequant_rows " << type_name(t) << ": first at " << d.first;
  }
}

TEST(KernelRefs, ToHalfRoundsToNearestEven) {
  // bf16: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 (ties to even: 1), a hair above rounds up; the largest
  // float overflows to infinity. f16: 65520 overflows, 2^-25 ties to 0, 1.5 * 2^-25 rounds to the least subnormal.
  const std::vector<float> x = {1.f + 0x1p-8f, 1.f + 0x1p-8f + 0x1p-20f, 3.4028235e38f, -2.5f,
                                65520.f,       0x1p-25f,                 0x1.8p-25f,    1.f + 0x1p-11f};
  std::vector<uint16_t> bf(x.size()), f16(x.size());
  cuda::ref::to_half(x.data(), bf.data(), WType::BF16, int64_t(x.size()));
  cuda::ref::to_half(x.data(), f16.data(), WType::F16, int64_t(x.size()));
  EXPECT_EQ(bf[0], 0x3f80);
  EXPECT_EQ(bf[1], 0x3f81);
  EXPECT_EQ(bf[2], 0x7f80);
  EXPECT_EQ(bf[3], 0xc020);
  EXPECT_EQ(f16[4], 0x7c00);
  EXPECT_EQ(f16[5], 0x0000);
  EXPECT_EQ(f16[6], 0x0001);
  EXPECT_EQ(f16[7], 0x3c00);  // 1 + 2^-11: halfway between 1 and 1 + 2^-10, to even
}

TEST(KernelRefs, RowAndElementwiseOpsFollowTheirDefinitions) {
  const int rows = 5, dim = 96;
  const std::vector<float> x = uniform(size_t(rows) * dim, -2.f, 2.f, 21), w = uniform(dim, 0.5f, 1.5f, 22);
  // rmsnorm: x / sqrt(mean(x^2) + eps) * w; silu_mul: g / (1 + e^-g) * u.
  std::vector<float> y(x.size()), want(x.size());
  cuda::ref::rmsnorm(x.data(), w.data(), y.data(), rows, dim, 1e-5f);
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int i = 0; i < dim; ++i) ss += double(x[size_t(r) * dim + i]) * x[size_t(r) * dim + i];
    const double scale = 1 / std::sqrt(ss / dim + 1e-5);
    for (int i = 0; i < dim; ++i) want[size_t(r) * dim + i] = float(x[size_t(r) * dim + i] * scale * w[i]);
  }
  EXPECT_LT(max_rel_diff(y, want), 1e-6);
  const std::vector<float> u = uniform(x.size(), -2.f, 2.f, 23);
  cuda::ref::silu_mul(x.data(), u.data(), y.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) want[i] = float(x[i] / (1 + std::exp(-double(x[i]))) * u[i]);
  EXPECT_LT(max_rel_diff(y, want), 1e-6);
  // gelu_tanh_mul: 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) * u, as transformers' gelu_pytorch_tanh.
  cuda::ref::gelu_tanh_mul(x.data(), u.data(), y.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double g = x[i];
    want[i] = float(0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g))) * u[i]);
  }
  EXPECT_LT(max_rel_diff(y, want), 1e-6);
  // soft_cap: cap * tanh(x / cap) (Gemma 2's final logits), at a cap the inputs of up to 2 reach.
  y = x;
  cuda::ref::soft_cap(y.data(), 1.5f, int64_t(y.size()));
  for (size_t i = 0; i < x.size(); ++i) want[i] = float(1.5 * std::tanh(double(x[i]) / 1.5));
  EXPECT_LT(max_rel_diff(y, want), 1e-6);
  y = x;
  cuda::ref::scale(y.data(), 1.75f, int64_t(y.size()));
  for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] * 1.75f;
  EXPECT_EQ(bit_diff(y, want).count, 0u);
  // add_bias broadcasts over rows; gather_rows copies rows in any order, repeats allowed.
  y = x;
  cuda::ref::add_bias(y.data(), w.data(), rows, dim);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < dim; ++i) want[size_t(r) * dim + i] = x[size_t(r) * dim + i] + w[i];
  EXPECT_EQ(bit_diff(y, want).count, 0u);
  // With two bias rows, taken in turn: rows 0, 2, 4 get bias row 0 and rows 1, 3 bias row 1.
  const std::vector<float> two = uniform(size_t(2) * dim, -1.f, 1.f, 24);
  y = x;
  cuda::ref::add_bias(y.data(), two.data(), rows, dim, 2);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < dim; ++i) want[size_t(r) * dim + i] = x[size_t(r) * dim + i] + two[size_t(r % 2) * dim + i];
  EXPECT_EQ(bit_diff(y, want).count, 0u);
  const std::vector<int32_t> pick = {4, 0, 4};
  std::vector<float> g(pick.size() * dim);
  cuda::ref::gather_rows(x.data(), pick.data(), int(pick.size()), dim, g.data());
  for (size_t r = 0; r < pick.size(); ++r)
    EXPECT_TRUE(std::equal(g.begin() + r * dim, g.begin() + (r + 1) * dim, x.begin() + pick[r] * dim)) << r;
}

TEST(KernelRefs, GemvIsEachRowDotEachWeightRow) {
  // 2 rows x 3 columns over k = 4, values exact in bf16 and f16: Y[r, j] = sum_c X[r, c] W[j, c].
  const std::vector<float> w = {1, 2, 3, 4, -1, 0.5f, 0, 2, 0.25f, 0.25f, 0.25f, 0.25f};
  const std::vector<float> x = {1, 1, 1, 1, 2, -1, 0.5f, 4};
  const std::vector<float> want = {10, 1.5f, 1, 17.5f, 5.5f, 1.375f};
  std::vector<float> y(6);
  cuda::ref::gemv(w.data(), WType::F32, x.data(), 2, 3, 4, y.data());
  EXPECT_EQ(y, want);
  for (WType t : {WType::F16, WType::BF16}) {
    std::vector<uint16_t> wh(w.size()), xh(x.size());
    cuda::ref::to_half(w.data(), wh.data(), t, int64_t(w.size()));
    cuda::ref::to_half(x.data(), xh.data(), t, int64_t(x.size()));
    std::fill(y.begin(), y.end(), 0.f);
    cuda::ref::gemv(wh.data(), t, xh.data(), 2, 3, 4, y.data());
    EXPECT_EQ(y, want) << (t == WType::F16 ? "f16" : "bf16");
  }
}

TEST(KernelRefs, BlockGemvIsTheEnginesReferenceProduct) {
  // block_gemv's reference against the engine's own yardstick (cpu::linear_reference: the weights dequantized by the
  // engine, each output summed in double and rounded once) over random rows of every block type: the same bits, so
  // the reference reads W's rows and X's where the kernel must.
  const int m = 37, k = 512, n = 3;
  uint32_t seed = 60;
  for (WType t : kBlockTypes) {
    const std::vector<uint8_t> w = random_rows(t, m, k, seed++);
    const std::vector<float> x = uniform(size_t(n) * k, -1.f, 1.f, seed++);
    std::vector<float> got(size_t(n) * m), want(got.size());
    cuda::ref::block_gemv(w.data(), t, x.data(), n, m, k, got.data());
    TensorView W;
    W.name = "random rows";
    W.dtype = wtype_dtype(t);
    W.shape = {m, k};
    W.data = w.data();
    cpu::linear_reference(x.data(), n, W, nullptr, want.data());
    EXPECT_EQ(bit_diff(got, want).count, 0u) << type_name(t);
  }
}

namespace {

// The softmax of one row in double, for the summary's definition.
std::vector<double> softmax_in_double(const float* x, int n) {
  double mx = -1e300, sum = 0;
  for (int j = 0; j < n; ++j) mx = std::max(mx, double(x[j]));
  std::vector<double> p(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) sum += (p[size_t(j)] = std::exp(double(x[j]) - mx));
  for (double& v : p) v /= sum;
  return p;
}

}  // namespace

TEST(KernelRefs, LogitSummaryIsTheArgmaxTheSoftmaxsTopAndTheProbesProbabilities) {
  const SummaryCase c = summary_case(4, 32000, 6, 900);
  std::vector<LogitSummary> sums(static_cast<size_t>(c.rows));
  std::vector<float> probe_probs(c.probe_tokens.size(), -1.f);
  cuda::ref::logit_summaries(c.logits.data(), c.rows, c.vocab, c.probe_start.data(), c.probe_tokens.data(),
                             sums.data(), probe_probs.data());
  for (int r = 0; r < c.rows; ++r) {
    const float* x = c.logits.data() + size_t(r) * c.vocab;
    const std::vector<double> p = softmax_in_double(x, c.vocab);
    // The definition's order: larger logit first, ties to the lower id.
    std::vector<int> order(size_t(c.vocab));
    for (int j = 0; j < c.vocab; ++j) order[size_t(j)] = j;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return x[a] > x[b]; });
    const LogitSummary& s = sums[size_t(r)];
    EXPECT_EQ(s.argmax, order[0]) << "row " << r;
    EXPECT_NEAR(s.argmax_prob, p[size_t(order[0])], 1e-6 * p[size_t(order[0])]) << "row " << r;
    ASSERT_EQ(s.top_count, kSummaryTopK) << "row " << r;
    for (int t = 0; t < kSummaryTopK; ++t) {
      EXPECT_EQ(s.top_ids[t], order[size_t(t)]) << "row " << r << ", bar " << t;
      EXPECT_NEAR(s.top_probs[t], p[size_t(order[size_t(t)])], 1e-6 * p[size_t(order[0])]) << "row " << r;
    }
    for (int j = c.probe_start[size_t(r)]; j < c.probe_start[size_t(r) + 1]; ++j)
      EXPECT_NEAR(probe_probs[size_t(j)], p[size_t(c.probe_tokens[size_t(j)])], 1e-6 * p[size_t(order[0])])
          << "row " << r << ", probe " << j;
  }
  // The planted ties: row 0's argmax is the lower of its two equal maxima; row 1's six equal tops go by id.
  EXPECT_LT(sums[0].argmax, c.vocab - 1);
  EXPECT_EQ(std::vector<int32_t>(sums[1].top_ids, sums[1].top_ids + kSummaryTopK), (std::vector<int32_t>{1, 3, 5, 7, 9}));
  EXPECT_FLOAT_EQ(sums[1].top_probs[0], sums[1].top_probs[4]);
}

TEST(KernelRefs, LogitSummaryLeavesOutBarsThatUnderflow) {
  // One token holds all the mass: the others' probabilities are 0 in f32 and get no bar, as in the why panel.
  std::vector<float> x(1000, -200.f);
  x[42] = 200.f;
  LogitSummary s;
  cuda::ref::logit_summaries(x.data(), 1, 1000, nullptr, nullptr, &s, nullptr);
  EXPECT_EQ(s.argmax, 42);
  EXPECT_EQ(s.argmax_prob, 1.f);
  EXPECT_EQ(s.top_count, 1);
  EXPECT_EQ(s.top_ids[0], 42);
}

TEST(KernelRefs, ProcessedRowIsProcessLogitsUpToTheCap) {
  std::mt19937 gen(31);
  std::normal_distribution<float> g(0.f, 2.f);
  std::vector<float> x(5000);
  for (auto& v : x) v = g(gen);
  x[17] = 14.f;
  auto row = std::make_unique<cuda::ProcessedRow>();
  SamplingParams sp;
  sp.temperature = 0.8f;
  sp.top_k = 50;
  cuda::ref::process_row(x.data(), int(x.size()), sp.temperature, sp.top_k, sp.top_p, sp.min_p, row.get());
  const Distribution d = process_logits(x.data(), int(x.size()), sp);
  ASSERT_EQ(row->count, int(d.size()));
  EXPECT_EQ(std::vector<int32_t>(row->ids, row->ids + row->count), d.ids);
  EXPECT_EQ(std::vector<float>(row->probs, row->probs + row->count), d.probs);
  EXPECT_EQ(row->ids[0], 17);
  // Temperature alone keeps all 5,000: more than the cap, so the host processes the row.
  cuda::ref::process_row(x.data(), int(x.size()), 0.8f, 0, 1.f, 0.f, row.get());
  EXPECT_EQ(row->count, -1);
}
