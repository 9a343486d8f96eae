// The engine's one thread team (engine/cpu/thread_pool.h): every part of a fork runs exactly once, a fork from
// inside a team or while another thread's team runs goes single-threaded (never a deadlock), an exception in any
// part reaches the caller, and the cap holds. Thousands of forks in a row check that no fork's parameters are
// mistaken for another's (the race the pool's every-worker acknowledgement prevents).
#include <gtest/gtest.h>

#include <sched.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/cpu/thread_pool.h"

namespace specscope {
namespace {

struct Threads {  // forces the threads asked for, whatever the machine's load
  explicit Threads(int n) : old_threads(cpu::set_num_threads(n)), old_backoff(cpu::set_backoff(false)) {}
  ~Threads() {
    cpu::set_num_threads(old_threads);
    cpu::set_backoff(old_backoff);
  }
  int old_threads;
  bool old_backoff;
};

TEST(ThreadPool, EveryPartRunsExactlyOnceOverManyForks) {
  Threads t(0);
  const int team = cpu::team_size();
  for (int fork = 0; fork < 5000; ++fork) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(team));
    int seen_nt = 0;
    cpu::run_team(team, size_t(1) << 30, 1, [&](int tid, int nt) {
      hits[size_t(tid)].fetch_add(1);
      if (tid == 0) seen_nt = nt;
    });
    ASSERT_GE(seen_nt, 1);
    for (int i = 0; i < seen_nt; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "fork " << fork << " part " << i;
    for (int i = seen_nt; i < team; ++i) ASSERT_EQ(hits[size_t(i)].load(), 0);
  }
}

// The join-wait counter (bench's step profile reports it per forward) counts the caller's wait for a slower share and
// not its own work.
TEST(ThreadPool, TheCallersWaitAtAJoinIsCounted) {
  Threads t(0);
  if (cpu::team_size() < 2) GTEST_SKIP() << "one thread: no joins";
  auto wait_of = [](int slow_tid) {
    const cpu::ThreadingStats before = cpu::threading_stats();
    int nt_seen = 0;
    cpu::run_team(2, size_t(1) << 30, 1, [&](int tid, int nt) {
      if (tid == 0) nt_seen = nt;
      if (tid == slow_tid) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    });
    const cpu::ThreadingStats after = cpu::threading_stats();
    EXPECT_EQ(nt_seen, 2);
    EXPECT_EQ(after.parallel_calls, before.parallel_calls + 1);
    return 1e-6 * double(after.join_wait_ns - before.join_wait_ns);
  };
  EXPECT_GE(wait_of(1), 19.0);  // the worker's 20 ms, waited for
  EXPECT_LT(wait_of(0), 15.0);  // the caller's own 20 ms are work, not waiting (the worker only has to finish)
}

TEST(ThreadPool, SmallWorkAndTheCapStayOnFewerThreads) {
  Threads t(1);
  int nt_seen = 0;
  cpu::run_team(8, size_t(1) << 30, 1, [&](int, int nt) { nt_seen = nt; });
  EXPECT_EQ(nt_seen, 1);
  cpu::set_num_threads(0);
  cpu::run_team(8, 10, 1000, [&](int, int nt) { nt_seen = nt; });  // below the parallel threshold
  EXPECT_EQ(nt_seen, 1);
}

TEST(ThreadPool, NestedAndConcurrentForksRunAloneInsteadOfDeadlocking) {
  Threads t(0);
  std::atomic<int> inner{0};
  cpu::run_team(4, size_t(1) << 30, 1, [&](int, int) {
    cpu::run_team(4, size_t(1) << 30, 1, [&](int, int nt) {
      EXPECT_EQ(nt, 1);
      inner.fetch_add(1);
    });
  });
  EXPECT_GE(inner.load(), 1);
  // Two sequences on two threads fork at the same time: both finish, each part once.
  std::atomic<long> total{0};
  auto work = [&] {
    for (int i = 0; i < 2000; ++i)
      cpu::run_team(4, size_t(1) << 30, 1, [&](int, int nt) { total.fetch_add(1000 / nt); });
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  EXPECT_GT(total.load(), 0);
}

TEST(ThreadPool, AnExceptionInAnyPartReachesTheCaller) {
  Threads t(0);
  EXPECT_THROW(cpu::run_team(4, size_t(1) << 30, 1,
                             [&](int tid, int nt) {
                               if (tid == nt - 1) throw std::runtime_error("part failed");
                             }),
               std::runtime_error);
  // The team still works afterwards.
  std::atomic<int> n{0};
  cpu::run_team(4, size_t(1) << 30, 1, [&](int, int) { n.fetch_add(1); });
  EXPECT_GE(n.load(), 1);
}

TEST(ThreadPool, AThreadSteppingOffItsCpuMovesAndKeepsItsAffinity) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "one CPU: there is nowhere to step to";
  std::thread t([&] {
    for (int round = 0; round < 20; ++round) {
      const int here = sched_getcpu();
      ASSERT_TRUE(cpu::step_off_cpu(here));
      EXPECT_NE(sched_getcpu(), here) << "still on CPU " << here << " after stepping off it";
      cpu_set_t now;
      CPU_ZERO(&now);
      ASSERT_EQ(sched_getaffinity(0, sizeof now, &now), 0);
      EXPECT_TRUE(CPU_EQUAL(&now, &allowed)) << "the affinity mask was not restored";
    }
    // A CPU the thread may not run on, or a mask of one CPU: nothing to do.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    EXPECT_FALSE(cpu::step_off_cpu(sched_getcpu()));
  });
  t.join();
}

TEST(ThreadPool, AWorkerOnItsCallersCpuMovesOff) {
  // The caller pinned to the CPU the worker ran on: the worker, finding itself on its caller's CPU, must move. The
  // kernel may migrate the worker itself when the caller is pinned there (it did under ASan on a loaded machine, so
  // no fork found them together): then the scenario is set up again, up to ten times.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "one CPU";
  Threads threads(2);
  std::thread t([&] {
    const auto before = cpu::threading_stats().stepped_aside;
    for (int attempt = 0; attempt < 10 && cpu::threading_stats().stepped_aside == before; ++attempt) {
      ASSERT_EQ(sched_setaffinity(0, sizeof allowed, &allowed), 0);
      std::atomic<int> first_worker_cpu{-1};
      cpu::run_team(2, 1 << 30, 1, [&](int tid, int) {
        if (tid == 1) first_worker_cpu = sched_getcpu();
      });
      ASSERT_GE(first_worker_cpu.load(), 0);
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(first_worker_cpu.load(), &one);
      ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
      const int caller_cpu = sched_getcpu();
      ASSERT_EQ(caller_cpu, first_worker_cpu.load());
      for (int fork = 0; fork < 200; ++fork) {
        std::atomic<int> worker_cpu{-1};
        cpu::run_team(2, 1 << 30, 1, [&](int tid, int) {
          if (tid == 1) worker_cpu = sched_getcpu();
        });
        // The worker read its CPU after any step off, so it never reports the caller's.
        ASSERT_NE(worker_cpu.load(), caller_cpu) << "attempt " << attempt << " fork " << fork;
      }
    }
    EXPECT_GE(cpu::threading_stats().stepped_aside, before + 1);
  });
  t.join();
}

}  // namespace
}  // namespace specscope
