// Work units shared out while a fork runs (engine/cpu/unit_shares.h, run_team_units in thread_pool.h): the claims of
// one member in order, every unit computed exactly once however the members race (eight plain threads hammering one
// UnitShares, and thousands of team forks), a slow member's units taken over by the others, and the static splits
// when sharing is off.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "engine/cpu/product_units.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/unit_shares.h"

namespace specscope {
namespace {

struct Threads {  // forces the threads asked for and the sharing setting, whatever the machine's load
  explicit Threads(int n, bool sharing = true)
      : old_threads(cpu::set_num_threads(n)), old_backoff(cpu::set_backoff(false)), old_sharing(cpu::set_unit_sharing(sharing)) {}
  ~Threads() {
    cpu::set_num_threads(old_threads);
    cpu::set_backoff(old_backoff);
    cpu::set_unit_sharing(old_sharing);
  }
  int old_threads;
  bool old_backoff, old_sharing;
};

struct Claim {
  int u0, u1;
  bool operator==(const Claim&) const = default;
};

TEST(UnitShares, OneMemberClaimsItsRangeInShrinkingPartsThenTakesTheBackHalfOfTheFullest) {
  cpu::UnitShares s;
  const int start[] = {0, 16, 20, 40};  // ranges [0,16) [16,20) [20,40); member 1's is the smallest
  s.reset(3, 40, [&](int i) { return start[i]; });
  std::vector<Claim> got;
  for (int u0, u1; s.claim(0, &u0, &u1);) got.push_back({u0, u1});
  // Own range: 16 -> take 12, 4 -> 3, 1 -> 1. Then the fullest other range is member 2's [20,40): its back half
  // [30,40) becomes member 0's (10 -> 8, 2 -> 2); then [20,30)'s back half [25,30) (5 -> 4, 1 -> 1); then member 1's
  // and member 2's ranges shrink alike, the fuller one first (ties: the lower member).
  const std::vector<Claim> first = {{0, 12}, {12, 15}, {15, 16}, {30, 38}, {38, 40}, {25, 29}, {29, 30}};
  ASSERT_GE(got.size(), first.size());
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(got[i], first[i]) << "claim " << i;
  std::vector<int> hits(40, 0);
  for (const Claim& c : got)
    for (int u = c.u0; u < c.u1; ++u) ++hits[size_t(u)];
  for (int u = 0; u < 40; ++u) EXPECT_EQ(hits[size_t(u)], 1) << "unit " << u;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.left(i), 0);
}

TEST(UnitShares, EveryUnitExactlyOnceWhileEightThreadsRace) {
  cpu::UnitShares s;
  for (int trial = 0; trial < 300; ++trial) {
    const int nt = 8, units = 1 + trial * 7 % 997;
    // Uneven starting ranges, some empty: member i starts at units * i^2 / nt^2.
    s.reset(nt, units, [&](int i) { return int(int64_t(units) * i * i / (nt * nt)); });
    std::vector<std::atomic<int>> hits(static_cast<size_t>(units));
    std::atomic<int> go{0};
    std::vector<std::thread> members;
    for (int tid = 0; tid < nt; ++tid)
      members.emplace_back([&, tid] {
        while (go.load() == 0) std::this_thread::yield();
        for (int u0, u1; s.claim(tid, &u0, &u1);) {
          ASSERT_LT(u0, u1);
          for (int u = u0; u < u1; ++u) hits[size_t(u)].fetch_add(1);
        }
      });
    go.store(1);
    for (auto& m : members) m.join();
    for (int u = 0; u < units; ++u) ASSERT_EQ(hits[size_t(u)].load(), 1) << "trial " << trial << " unit " << u;
  }
}

TEST(RunTeamUnits, EveryUnitExactlyOnceOverManyForks) {
  Threads t(0);
  for (int fork = 0; fork < 3000; ++fork) {
    const int units = 1 + fork % 301;
    std::vector<std::atomic<int>> hits(static_cast<size_t>(units));
    // Every third fork with its own starting points (the byte-balanced splits of the integer kernels).
    std::function<int(int, int)> first;
    if (fork % 3 == 0) first = [&](int tid, int nt) { return units - int(int64_t(units) * (nt - tid) / nt / 2); };
    cpu::run_team_units(units, size_t(1) << 30, 1, [&](int u0, int u1) {
      for (int u = u0; u < u1; ++u) hits[size_t(u)].fetch_add(1);
    }, first);
    for (int u = 0; u < units; ++u) ASSERT_EQ(hits[size_t(u)].load(), 1) << "fork " << fork << " unit " << u;
  }
}

// The point of sharing: when one member stalls (descheduled, or streaming memory slower), the others compute what
// is left of its range instead of waiting at the join. A handshake instead of a sleep, so load cannot reorder it:
// the worker, once it holds its first claim, stalls until the caller has computed a unit of the worker's range.
TEST(RunTeamUnits, ASlowMembersUnitsAreTakenOver) {
  Threads t(2);
  if (cpu::team_threads_for(64, size_t(1) << 30, 1) < 2) GTEST_SKIP() << "one thread: nothing to share";
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::thread::id> by(64);
  std::atomic<bool> worker_started{false}, taken_over{false};
  bool caller_started = false;
  auto wait_for = [](const std::atomic<bool>& flag) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!flag.load() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  };
  cpu::run_team_units(64, size_t(1) << 30, 1, [&](int u0, int u1) {
    const bool on_caller = std::this_thread::get_id() == caller;
    if (!on_caller && !worker_started.exchange(true)) {
      wait_for(taken_over);  // the stall, holding its first claim
    } else if (on_caller && !caller_started) {
      caller_started = true;
      wait_for(worker_started);  // the worker claims first, so the caller does not simply take everything
    }
    for (int u = u0; u < u1; ++u) {
      by[size_t(u)] = std::this_thread::get_id();
      if (on_caller && u >= 32) taken_over.store(true);
    }
  });
  int callers_in_workers_range = 0;
  for (int u = 32; u < 64; ++u) callers_in_workers_range += by[size_t(u)] == caller;
  EXPECT_TRUE(worker_started.load()) << "the worker never ran";
  EXPECT_TRUE(taken_over.load()) << "the caller waited for the stalled worker instead of taking its units";
  EXPECT_GE(callers_in_workers_range, 1);
}

// With sharing off, and for forks too small to gain from it (below ~4M multiply-adds: the shipped base's one-token
// forks), each member computes exactly its starting range in one call.
void expect_static_split(bool sharing, size_t macs) {
  Threads t(2, sharing);
  if (cpu::team_threads_for(10, macs, 1) < 2) GTEST_SKIP() << "one thread: nothing to split";
  std::mutex mu;
  std::vector<Claim> calls;
  cpu::run_team_units(10, macs, 1, [&](int u0, int u1) {
    std::lock_guard lk(mu);
    calls.push_back({u0, u1});
  }, [](int tid, int nt) { return tid * 3 / nt; });  // member 1 starts at unit 1
  ASSERT_EQ(calls.size(), 2u);
  if (calls[0].u0 != 0) std::swap(calls[0], calls[1]);
  EXPECT_EQ(calls[0], (Claim{0, 1}));
  EXPECT_EQ(calls[1], (Claim{1, 10}));
}

TEST(RunTeamUnits, SharingOffGivesEachMemberExactlyItsStartingRange) { expect_static_split(false, size_t(1) << 30); }
TEST(RunTeamUnits, SmallForksKeepTheStaticSplit) { expect_static_split(true, 100000); }

TEST(RunTeamUnits, LargeForksAreShared) {  // the counterpart: the same fork, large, is claimed in several parts
  Threads t(2);
  if (cpu::team_threads_for(10, size_t(1) << 30, 1) < 2) GTEST_SKIP() << "one thread: nothing to share";
  std::atomic<int> calls{0};
  cpu::run_team_units(10, size_t(1) << 30, 1, [&](int, int) { calls.fetch_add(1); });
  EXPECT_GT(calls.load(), 2);
}

TEST(RunTeamUnits, OneThreadGetsEverythingInOneCall) {
  Threads t(1);
  int calls = 0, lo = -1, hi = -1;
  cpu::run_team_units(50, size_t(1) << 30, 1, [&](int u0, int u1) { ++calls, lo = u0, hi = u1; });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 50);
}

// Products laid end to end (product_units.h): any split of the whole into claimed ranges, each mapped back to
// (product, own units), gives every product's units exactly once, in order, and nothing of an empty product.
TEST(ProductUnits, EverySplitMapsBackToEachProductsOwnUnitsExactlyOnce) {
  const std::vector<int> sizes = {3, 0, 5, 1, 0, 7};
  auto units_of = [&](int i) { return sizes[size_t(i)]; };
  const int count = int(sizes.size()), total = cpu::detail::total_product_units(count, units_of);
  ASSERT_EQ(total, 16);
  for (int cut1 = 0; cut1 <= total; ++cut1)
    for (int cut2 = cut1; cut2 <= total; ++cut2) {
      std::vector<std::vector<int>> seen(sizes.size());
      for (auto [u0, u1] : {std::pair{0, cut1}, std::pair{cut1, cut2}, std::pair{cut2, total}})
        cpu::detail::for_each_product_units(count, u0, u1, units_of, [&](int i, int b0, int b1) {
          ASSERT_LT(b0, b1) << "an empty piece was passed on";
          for (int b = b0; b < b1; ++b) seen[size_t(i)].push_back(b);
        });
      for (size_t i = 0; i < sizes.size(); ++i) {
        std::vector<int> want(size_t(sizes[i]));
        for (int b = 0; b < sizes[i]; ++b) want[size_t(b)] = b;
        EXPECT_EQ(seen[i], want) << "product " << i << " with cuts " << cut1 << ", " << cut2;
      }
    }
}

}  // namespace
}  // namespace specscope
