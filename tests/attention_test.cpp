// The CPU attention kernel (engine/cpu/attention.cpp) on its own: each row's output against a double-precision
// reference (with and without Gemma 2's soft cap), and bit-identical whether the row is computed alone or among other
// tree rows, on one thread or two. The kernel groups rows (two rows of a KV head share every key and value load) and
// splits a row's keys into the prefix all rows see and its own tail; neither may change a row's result, which greedy
// losslessness rests on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "engine/cpu/attention.h"
#include "engine/cpu/isa_dispatch.h"
#include "engine/cpu/thread_pool.h"

using namespace specscope;

namespace {

struct Shape {
  int heads, kv_heads, head_dim, context, rows;
};

// Keys, values and queries of a step: `context` cached keys every row sees (unless a window hides the oldest), then
// `rows` tree rows, each seeing itself and a random earlier row of the step as its parent's chain.
struct Step {
  Shape s;
  int keys = 0;
  size_t kt_stride = 0;
  std::vector<float> q, kt, v;
  std::vector<uint8_t> visible;  // [rows][keys]
  float soft_cap = 0.f;          // Gemma 2's: scores become soft_cap * tanh(score / soft_cap)

  Step(Shape shape, uint32_t seed, int window_hidden = 0) : s(shape) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    keys = s.context + s.rows;
    kt_stride = cpu::kt_stride_for(keys);
    q.resize(size_t(s.rows) * s.heads * s.head_dim);
    kt.assign(size_t(s.kv_heads) * kt_stride * s.head_dim, 0.f);
    v.resize(size_t(keys) * s.kv_heads * s.head_dim);
    for (auto& x : q) x = nd(rng);
    for (auto& x : v) x = nd(rng);
    for (int h = 0; h < s.kv_heads; ++h)
      for (int d = 0; d < s.head_dim; ++d)
        for (int j = 0; j < keys; ++j) kt[cpu::kt_index(h, d, j, s.head_dim, kt_stride)] = nd(rng);
    visible.assign(size_t(s.rows) * keys, 0);
    std::vector<int> parent(size_t(s.rows), -1);
    for (int r = 1; r < s.rows; ++r) parent[size_t(r)] = int(rng() % uint32_t(r + 1)) - 1;  // -1: a root
    for (int r = 0; r < s.rows; ++r) {
      uint8_t* vis = visible.data() + size_t(r) * keys;
      for (int j = window_hidden; j < s.context; ++j) vis[j] = 1;
      for (int a = r; a >= 0; a = parent[size_t(a)]) vis[s.context + a] = 1;
    }
  }

  // rows [r0, r0 + n) as their own call: their queries, their visibility, the same cache; with `packed`, the
  // visibility also handed over packed by the caller (as the forward does once per forward).
  std::vector<float> run(int r0, int n, int threads, bool packed = false) const {
    const int qd = s.heads * s.head_dim;
    std::vector<float> out(size_t(n) * qd, -1.f);
    cpu::AttentionArgs a;
    a.q = q.data() + size_t(r0) * qd;
    a.q_stride = size_t(qd);
    a.rows = n;
    a.heads = s.heads;
    a.kv_heads = s.kv_heads;
    a.head_dim = s.head_dim;
    a.kt = kt.data();
    a.kt_stride = kt_stride;
    a.v = v.data();
    a.v_stride = size_t(s.kv_heads) * s.head_dim;
    a.keys = keys;
    a.visible = visible.data() + size_t(r0) * keys;
    cpu::VisibleKeys seen;
    if (packed) {
      seen.build(a.visible, n, keys);
      a.seen = &seen;
    }
    a.scale = 1.f / std::sqrt(float(s.head_dim));
    a.soft_cap = soft_cap;
    a.out = out.data();
    a.out_stride = size_t(qd);
    const int old = cpu::set_num_threads(threads);
    cpu::attention(a);
    cpu::set_num_threads(old);
    return out;
  }

  // Row r, head h in double precision.
  std::vector<double> reference(int r, int h) const {
    const int hd = s.head_dim, kvh = h / (s.heads / s.kv_heads);
    const float* qr = q.data() + (size_t(r) * s.heads + h) * hd;
    std::vector<double> score(size_t(keys), -INFINITY), out(size_t(hd), 0.0);
    double mx = -INFINITY;
    for (int j = 0; j < keys; ++j) {
      if (!visible[size_t(r) * keys + j]) continue;
      double acc = 0;
      for (int d = 0; d < hd; ++d) acc += double(qr[d]) * kt[cpu::kt_index(kvh, d, j, hd, kt_stride)];
      score[size_t(j)] = acc / std::sqrt(double(hd));
      if (soft_cap > 0.f) score[size_t(j)] = soft_cap * std::tanh(score[size_t(j)] / soft_cap);
      mx = std::max(mx, score[size_t(j)]);
    }
    double sum = 0;
    for (int j = 0; j < keys; ++j)
      if (std::isfinite(score[size_t(j)])) sum += std::exp(score[size_t(j)] - mx);
    for (int j = 0; j < keys; ++j) {
      if (!std::isfinite(score[size_t(j)])) continue;
      const double w = std::exp(score[size_t(j)] - mx) / sum;
      for (int d = 0; d < hd; ++d) out[size_t(d)] += w * v[(size_t(j) * s.kv_heads + kvh) * hd + d];
    }
    return out;
  }
};

class AttentionShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(AttentionShapes, EveryRowMatchesDoublePrecisionAndItselfAlone) {
  const Shape s = GetParam();
  // hidden 5: a sliding window hides the oldest keys, so no key is seen by every row; a soft cap of 1.5 bends these
  // scores (standard deviation 1) well inside tanh's curve.
  for (const auto [hidden, cap] : {std::pair{0, 0.f}, std::pair{5, 0.f}, std::pair{5, 1.5f}}) {
    SCOPED_TRACE(testing::Message() << "window hides " << hidden << ", soft cap " << cap);
    Step step(s, 1234u + uint32_t(s.rows), hidden);
    step.soft_cap = cap;
    const int qd = s.heads * s.head_dim;
    for (int threads : {1, 2}) {
      SCOPED_TRACE(testing::Message() << threads << " threads");
      const std::vector<float> all = step.run(0, s.rows, threads);
      const std::vector<float> packed = step.run(0, s.rows, threads, /*packed=*/true);
      EXPECT_EQ(std::memcmp(packed.data(), all.data(), sizeof(float) * all.size()), 0)
          << "the caller's packed visibility gives other bits than attention()'s own";
      for (int r = 0; r < s.rows; ++r) {
        const std::vector<float> alone = step.run(r, 1, threads);
        EXPECT_EQ(std::memcmp(alone.data(), all.data() + size_t(r) * qd, sizeof(float) * size_t(qd)), 0)
            << "row " << r << " of " << s.rows;
        if (r > 0) {  // and among just its predecessor, a different grouping of rows
          const std::vector<float> pair = step.run(r - 1, 2, threads);
          EXPECT_EQ(std::memcmp(pair.data() + qd, all.data() + size_t(r) * qd, sizeof(float) * size_t(qd)), 0)
              << "row " << r << " after row " << r - 1;
        }
        for (int h = 0; h < s.heads; ++h) {
          const std::vector<double> ref = step.reference(r, h);
          for (int d = 0; d < s.head_dim; ++d)
            ASSERT_NEAR(all[size_t(r) * qd + size_t(h) * s.head_dim + d], ref[size_t(d)], 2e-5)
                << "row " << r << " head " << h << " element " << d;
        }
      }
    }
  }
}

// The kernel is compiled per instruction set at 16, 8 or 4 floats a vector (isa_dispatch.h). The widths with FMA
// (AVX-512's 16, AVX2's 8) give the same bits, so a session's tokens do not depend on which of them a machine has;
// baseline x86-64 (4, no FMA) rounds each product before adding it, within f32 rounding of the others.
TEST_P(AttentionShapes, EveryVectorWidthWithFmaGivesTheSameBits) {
  const Shape s = GetParam();
  Step step(s, 777u + uint32_t(s.rows));
  const int widest = cpu::isa_lanes_supported(16) ? 16 : cpu::isa_lanes_supported(8) ? 8 : 4;
  const int before = cpu::set_isa_lanes(widest);
  int widths = 0;
  for (const float cap : {0.f, 1.5f}) {  // with and without Gemma 2's soft cap
    step.soft_cap = cap;
    cpu::set_isa_lanes(widest);
    const std::vector<float> ref = step.run(0, s.rows, 2);
    for (int lanes : {16, 8, 4}) {
      if (!cpu::isa_lanes_supported(lanes) || lanes == widest) continue;
      widths += cap == 0.f;
      cpu::set_isa_lanes(lanes);
      const std::vector<float> out = step.run(0, s.rows, 2);
      if (lanes >= 8) {
        EXPECT_EQ(std::memcmp(out.data(), ref.data(), sizeof(float) * ref.size()), 0)
            << lanes << " floats a vector, soft cap " << cap;
      } else {
        for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(out[i], ref[i], 1e-5) << "element " << i << ", cap " << cap;
      }
    }
  }
  cpu::set_isa_lanes(before);
#if defined(__x86_64__) && !defined(__clang__) && !defined(SPECSCOPE_NO_TARGET_CLONES)
  EXPECT_GE(widths, 1) << "an x86-64 build compiles the kernel at 4 floats beside this CPU's own width";
#endif
}

INSTANTIATE_TEST_SUITE_P(
    Cpu, AttentionShapes,
    ::testing::Values(Shape{6, 2, 64, 150, 8},    // the default base's shape, an 8-token step
                      Shape{6, 2, 64, 37, 7},     // odd row count: a last task with one row
                      Shape{32, 8, 64, 70, 5},    // Llama-3.2-1B's groups of 4: one row per task
                      Shape{4, 4, 64, 20, 6},     // no grouping
                      Shape{14, 2, 64, 33, 3},    // groups of 7: chunks of 6 and 1 query vectors
                      Shape{12, 1, 128, 45, 4},   // head_dim 128, one KV head
                      Shape{4, 2, 80, 19, 3},     // head_dim not a multiple of 16
                      Shape{6, 2, 64, 0, 5}));    // no cache: only the tree rows

// A row that sees nothing gets zeros (what the softmax of all -inf gives), beside rows that see keys.
TEST(Attention, ARowThatSeesNothingGetsZeros) {
  Step step(Shape{6, 2, 64, 40, 4}, 99u);
  std::fill(step.visible.begin() + step.keys * 2, step.visible.begin() + step.keys * 3, 0);
  const std::vector<float> out = step.run(0, 4, 2);
  const int qd = 6 * 64;
  for (int i = 0; i < qd; ++i) ASSERT_EQ(out[size_t(2) * qd + i], 0.f);
  EXPECT_NE(out[size_t(1) * qd], 0.f);
  EXPECT_NE(out[size_t(3) * qd], 0.f);
}

}  // namespace
