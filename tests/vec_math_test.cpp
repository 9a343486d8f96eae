// The vector exp behind silu and softmax (engine/cpu/vec_math.h) against double-precision exp, and the two kernels
// against their plain formulas; softmax's result for a row must not change when masked (-inf) entries are appended
// (attention's batch invariance rests on it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/cpu/isa_dispatch.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/rope_table.h"
#include "engine/cpu/vec_math.h"

using namespace specscope;

namespace {

float ulp_distance(float a, float b) {
  if (a == b) return 0;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return float(std::abs(int64_t(ia) - int64_t(ib)));
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
std::vector<float> exp_all(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); i += cpu::vec::kLanes) {
    const int r = int(std::min<size_t>(cpu::vec::kLanes, x.size() - i));
    cpu::vec::store_part(y.data() + i, cpu::vec::exp_v(cpu::vec::load_part(x.data() + i, r)), r);
  }
  return y;
}
#pragma GCC diagnostic pop

}  // namespace

TEST(VecMath, ExpWithinTwoUlpOverTheNormalRange) {
  std::vector<float> x;
  for (float v = -87.0f; v < 88.0f; v += 0.0137f) x.push_back(v);
  const auto y = exp_all(x);
  float worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float ref = float(std::exp(double(x[i])));
    worst = std::max(worst, ulp_distance(y[i], ref));
  }
  EXPECT_LE(worst, 2.0f);
}

TEST(VecMath, ExpOfMaskedAndExtremeArguments) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const auto y = exp_all({ninf, -1000.f, -88.f, 0.f, 88.f, std::numeric_limits<float>::quiet_NaN()});
  EXPECT_EQ(y[0], 0.f);  // masked keys get weight exactly 0
  EXPECT_EQ(y[1], 0.f);
  EXPECT_GE(y[2], 0.f);
  EXPECT_EQ(y[3], 1.f);
  EXPECT_TRUE(std::isfinite(y[4]));
  EXPECT_TRUE(std::isnan(y[5]));
}

// Gemma 2's soft cap, cap * tanh(x / cap), on the vector tanh (Cephes' tanhf): within a few float ulps of the
// double-precision formula over every range it meets, its small arguments included (where 1 - 2 / (e^2x + 1)
// alone would lose digits), odd, +-cap far out, NaN kept; and the same bits whether an element sits in a whole
// vector or the tail.
TEST(VecMath, SoftCapMatchesItsFormula) {
  std::vector<float> x;
  for (float v = -200.f; v < 200.f; v += 0.0173f) x.push_back(v);
  for (float v = -1e-3f; v < 1e-3f; v += 1.37e-6f) x.push_back(v);
  x.push_back(0.f);
  for (const float cap : {1.5f, 30.f, 50.f}) {
    std::vector<float> y = x;
    cpu::soft_cap(y.data(), cap, int64_t(y.size()));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double ref = double(cap) * std::tanh(double(x[i]) / double(cap));
      worst = std::max(worst, std::fabs(y[i] - ref) / std::max(std::fabs(ref), 1e-30));
    }
    EXPECT_LE(worst, 4e-7) << "cap " << cap;  // ~3 ulps
    std::vector<float> ends = {0.f, 1e4f, -1e4f, std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN()};
    cpu::soft_cap(ends.data(), cap, int64_t(ends.size()));
    EXPECT_EQ(ends[0], 0.f);
    EXPECT_EQ(ends[1], cap);
    EXPECT_EQ(ends[2], -cap);
    EXPECT_EQ(ends[3], cap);
    EXPECT_TRUE(std::isnan(ends[4]));
    for (int n : {1, 7, 17}) {  // every element alone: as in the whole run
      for (size_t i = 0; i + size_t(n) <= 200; i += size_t(n)) {
        std::vector<float> part(x.begin() + long(i), x.begin() + long(i) + n);
        cpu::soft_cap(part.data(), cap, n);
        ASSERT_EQ(0, std::memcmp(part.data(), y.data() + i, sizeof(float) * size_t(n))) << "n " << n << " at " << i;
      }
    }
  }
}

TEST(VecMath, SiluMulMatchesItsFormula) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 4.f);
  for (int n : {1, 15, 16, 17, 100, 1024}) {
    std::vector<float> g(n), u(n), out(n);
    for (int i = 0; i < n; ++i) g[i] = nd(rng), u[i] = nd(rng);
    cpu::silu_mul(g.data(), u.data(), out.data(), n);
    for (int i = 0; i < n; ++i) {
      const double ref = double(g[i]) / (1.0 + std::exp(-double(g[i]))) * double(u[i]);
      EXPECT_NEAR(out[i], ref, 1e-6 * std::abs(ref) + 1e-30) << "n=" << n << " i=" << i;
    }
  }
}

TEST(VecMath, SoftmaxMatchesItsFormulaAndIgnoresAppendedMaskedEntries) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.f, 3.f);
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int n : {2, 7, 16, 33, 130}) {
    std::vector<float> x(n);
    for (auto& v : x) v = nd(rng);
    x[0] = ninf;  // a masked key inside the row
    std::vector<float> a = x;
    cpu::softmax(a.data(), n);
    double mx = -1e30, sum = 0;
    for (float v : x) mx = std::max(mx, double(v));
    for (float v : x) sum += std::exp(double(v) - mx);
    for (int i = 0; i < n; ++i) EXPECT_NEAR(a[i], std::exp(double(x[i]) - mx) / sum, 2e-7) << n << " " << i;
    EXPECT_EQ(a[0], 0.f);
    // The same row inside a longer one whose extra entries are masked: bit-identical.
    for (int extra : {1, 9, 40}) {
      std::vector<float> b = x;
      b.resize(size_t(n + extra), ninf);
      cpu::softmax(b.data(), int(b.size()));
      for (int i = 0; i < n; ++i) ASSERT_EQ(a[i], b[i]) << "n=" << n << " extra=" << extra;
    }
  }
}

// rmsnorm, dot and log_softmax in vectors: each within f32 rounding of the double-precision formula, and a row's
// result the same bits whether normalized alone or among other rows (odd widths exercise the tails).
TEST(VecMath, RowKernelsMatchTheirFormulasAndDoNotDependOnOtherRows) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int dim : {5, 16, 37, 384, 4096}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    const int rows = 3;
    std::vector<float> x(size_t(rows) * size_t(dim));
    std::vector<float> w(static_cast<size_t>(dim)), y(x.size()), alone(static_cast<size_t>(dim));
    for (auto& v : x) v = nd(rng) * 3.f;
    for (auto& v : w) v = nd(rng);
    cpu::rmsnorm(x.data(), w.data(), y.data(), rows, dim, 1e-5f);
    cpu::rmsnorm(x.data() + size_t(dim), w.data(), alone.data(), 1, dim, 1e-5f);
    EXPECT_EQ(0, std::memcmp(alone.data(), y.data() + size_t(dim), sizeof(float) * size_t(dim)));
    double ss = 0;
    for (int i = 0; i < dim; ++i) ss += double(x[size_t(dim) + i]) * x[size_t(dim) + i];
    const double scale = 1.0 / std::sqrt(ss / dim + 1e-5);
    for (int i = 0; i < dim; ++i)
      EXPECT_NEAR(alone[size_t(i)], w[size_t(i)] * x[size_t(dim) + i] * scale, 1e-5 * (1 + std::fabs(alone[size_t(i)])));

    double d = 0, mag = 0;
    for (int i = 0; i < dim; ++i) d += double(x[size_t(i)]) * w[size_t(i)], mag += std::fabs(double(x[size_t(i)]) * w[size_t(i)]);
    EXPECT_NEAR(cpu::dot(x.data(), w.data(), dim), d, 1e-6 * mag + 1e-6);

    std::vector<float> lp(x.begin(), x.begin() + dim);
    cpu::log_softmax(lp.data(), dim);
    double mx = -1e30, sum = 0;
    for (int i = 0; i < dim; ++i) mx = std::max(mx, double(x[size_t(i)]));
    for (int i = 0; i < dim; ++i) sum += std::exp(double(x[size_t(i)]) - mx);
    for (int i = 0; i < dim; ++i) EXPECT_NEAR(lp[size_t(i)], double(x[size_t(i)]) - mx - std::log(sum), 2e-5);
  }
}

// The RoPE table rotates exactly as cpu::rope does, at positions it has tabled and past them.
TEST(VecMath, RopeTableEqualsRope) {
  const int hd = 64, heads = 3;
  std::vector<float> inv(hd / 2);
  for (int i = 0; i < hd / 2; ++i) inv[size_t(i)] = 1.f / std::pow(10000.f, 2.f * float(i) / float(hd));
  cpu::RopeTable table(inv, hd);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int32_t pos : {0, 1, 7, 63, 64, 65, 500, 70000, 3}) {
    std::vector<float> a(size_t(heads) * hd);
    for (auto& v : a) v = nd(rng);
    std::vector<float> b = a;
    cpu::rope(a.data(), heads, hd, pos, inv.data());
    table.apply(b.data(), heads, pos);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), sizeof(float) * a.size())) << "position " << pos;
  }
}

// The kernels compiled per instruction set run vec_math.h at 16, 8 or 4 floats a vector (isa_dispatch.h): the exp,
// the maximum, the sum of exponentials (kept in 16 lanes at every width) and the scaling give the same bits at every
// width, so a machine's results do not depend on which vector width its CPU gets (compiled here for this file's
// baseline target, which still exercises each width's code).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
namespace {
template <int L>
std::vector<float> exp_at_width(const std::vector<float>& x) {
  using V = cpu::vec::vec_t<L>;
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); i += L) {
    const int r = int(std::min<size_t>(L, x.size() - i));
    cpu::vec::store_part(y.data() + i, cpu::vec::exp_v(cpu::vec::load_part<V>(x.data() + i, r)), r);
  }
  return y;
}
struct SoftmaxParts {
  float max = 0, sum = 0;
  std::vector<float> out;
};
template <bool kPadded, int L>
SoftmaxParts softmax_at_width(std::vector<float> x, int n) {
  SoftmaxParts p;
  p.max = cpu::vec::max_of<kPadded, L>(x.data(), n);
  p.sum = cpu::vec::sum_exp<kPadded, L>(x.data(), n, p.max, true);
  cpu::vec::scale<kPadded, L>(x.data(), n, 1.f / p.sum);
  p.out = std::move(x);
  return p;
}
template <bool kPadded>
void expect_same_softmax_at_every_width(const std::vector<float>& x, int n) {
  const auto a = softmax_at_width<kPadded, 16>(x, n), b = softmax_at_width<kPadded, 8>(x, n),
             c = softmax_at_width<kPadded, 4>(x, n);
  ASSERT_EQ(a.max, b.max);
  ASSERT_EQ(a.max, c.max);
  ASSERT_EQ(a.sum, b.sum) << "n=" << n;
  ASSERT_EQ(a.sum, c.sum) << "n=" << n;
  EXPECT_EQ(0, std::memcmp(a.out.data(), b.out.data(), sizeof(float) * size_t(n))) << "n=" << n;
  EXPECT_EQ(0, std::memcmp(a.out.data(), c.out.data(), sizeof(float) * size_t(n))) << "n=" << n;
}
}  // namespace

TEST(VecMath, EveryVectorWidthGivesTheSameBits) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 1.f);  // many terms of a sum alike: its order shows in the last bits
  std::vector<float> x(4099);
  for (auto& v : x) v = nd(rng);
  x[3] = -std::numeric_limits<float>::infinity();
  const auto e16 = exp_at_width<16>(x), e8 = exp_at_width<8>(x), e4 = exp_at_width<4>(x);
  EXPECT_EQ(0, std::memcmp(e16.data(), e8.data(), sizeof(float) * x.size()));
  EXPECT_EQ(0, std::memcmp(e16.data(), e4.data(), sizeof(float) * x.size()));
  for (int n : {1, 3, 4, 7, 8, 9, 15, 16, 17, 24, 31, 33, 130, 1000, 4099}) {
    SCOPED_TRACE("n " + std::to_string(n));
    std::vector<float> row(x.begin(), x.begin() + n);
    expect_same_softmax_at_every_width<false>(row, n);
    row.resize((size_t(n) + 15) / 16 * 16, 123.f);  // padding to whole 16-float vectors, holding anything
    expect_same_softmax_at_every_width<true>(row, n);
  }
}
#pragma GCC diagnostic pop

// The same for the kernels built on them (ops.h), at every width this CPU runs (isa_dispatch.h): the same bits at
// the widths with FMA (16 and 8), within f32 rounding at baseline x86-64's 4 (no FMA: each product rounded).
TEST(VecMath, KernelsGiveTheSameBitsAtEveryWidthWithFma) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.f, 2.f);
  const int n = 1000 + 13;
  std::vector<float> g(n), u(n);
  for (int i = 0; i < n; ++i) g[size_t(i)] = nd(rng), u[size_t(i)] = nd(rng);
  auto run_all = [&] {
    std::vector<std::vector<float>> out(5, std::vector<float>(size_t(n)));
    cpu::silu_mul(g.data(), u.data(), out[0].data(), n);
    cpu::gelu_tanh_mul(g.data(), u.data(), out[1].data(), n);
    out[2] = g;
    cpu::softmax(out[2].data(), n);
    out[3] = g;
    cpu::log_softmax(out[3].data(), n);
    out[4] = g;
    cpu::soft_cap(out[4].data(), 3.f, n);
    return out;
  };
  const int widest = cpu::isa_lanes_supported(16) ? 16 : cpu::isa_lanes_supported(8) ? 8 : 4;
  const int before = cpu::set_isa_lanes(widest);
  const auto ref = run_all();
  for (int lanes : {8, 4}) {
    if (!cpu::isa_lanes_supported(lanes) || lanes == widest) continue;
    cpu::set_isa_lanes(lanes);
    const auto out = run_all();
    for (size_t f = 0; f < ref.size(); ++f) {
      if (lanes >= 8) {
        EXPECT_EQ(0, std::memcmp(out[f].data(), ref[f].data(), sizeof(float) * size_t(n)))
            << "kernel " << f << " at " << lanes << " floats a vector";
      } else {
        for (int i = 0; i < n; ++i)
          ASSERT_NEAR(out[f][size_t(i)], ref[f][size_t(i)], 1e-5 * (1 + std::fabs(ref[f][size_t(i)])))
              << "kernel " << f << " element " << i;
      }
    }
  }
  cpu::set_isa_lanes(before);
}
