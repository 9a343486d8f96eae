#include "engine/cpu/thread_pool.h"

#include "engine/cpu/fork_backoff.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace specscope::cpu {

namespace {

using Clock = std::chrono::steady_clock;

int64_t nanos_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return *end || x < 0 ? fallback : int(x);
}

int default_team_size() {
  if (int n = env_int("SPECSCOPE_THREADS", 0)) return n;
  if (int n = env_int("OMP_NUM_THREADS", 0)) return n;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// How long a waiting thread stays awake before it sleeps on a futex, and after how long of that it yields the
// core at each look (sched_yield: a no-op when nothing else wants the core, the core handed over when something
// does). Sleeping is dear on a virtual machine: a futex wake-up of an idle vCPU measured 64-256 us here, a third
// of a decoding step of the shipped base, and the gaps between forwards (sampling, the step record, a drafter's
// serial work) are often longer than the old 50 us of spinning; yielding keeps a long spin from taking a core
// another process is waiting for.
const std::chrono::nanoseconds kSpin = std::chrono::microseconds(env_int("SPECSCOPE_SPIN_US", 1000));
const std::chrono::nanoseconds kSpinBeforeYield = std::chrono::microseconds(env_int("SPECSCOPE_SPIN_YIELD_US", 20));

// Spins on `a` while it equals `old` for kSpin (yielding after kSpinBeforeYield), then sleeps on it (futex)
// until it changes.
template <typename T>
T wait_change(const std::atomic<T>& a, T old) {
  T v = a.load(std::memory_order_acquire);
  if (v != old) return v;
  const auto start = Clock::now();
  const auto yield_from = start + kSpinBeforeYield, until = start + kSpin;
  bool yielding = false;
  for (int i = 0;; ++i) {
    v = a.load(std::memory_order_acquire);
    if (v != old) return v;
    if (yielding) {
      sched_yield();
      if ((i & 7) == 7 && Clock::now() > until) break;
    } else if ((i & 63) == 63) {
      const auto now = Clock::now();
      if (now > until) break;
      yielding = now > yield_from;
    } else {
      cpu_relax();
    }
  }
  for (;;) {
    a.wait(old, std::memory_order_acquire);
    v = a.load(std::memory_order_acquire);
    if (v != old) return v;
  }
}

thread_local bool t_in_team = false;

std::atomic<int64_t> g_stats_stepped_aside{0};

class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
  }
  ~Pool() {
    stop_.store(true);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int size() const { return int(workers_.size()) + 1; }

  // Runs body on the team; false (nothing run) when another thread's team is running: the caller then runs alone.
  bool run(int nt, const std::function<void(int, int)>& body) {
    std::unique_lock lk(mu_, std::try_to_lock);
    if (!lk.owns_lock()) return false;
    body_ = &body;
    nt_ = nt;
    error_ = nullptr;
    // Every worker acknowledges every fork, in the team or not: the next fork cannot be published before each
    // has seen this one, so none can mistake one fork's parameters for another's.
    remaining_.store(size() - 1, std::memory_order_relaxed);
    caller_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    t_in_team = true;
    try {
      body(0, nt);
    } catch (...) {
      record_error();
    }
    t_in_team = false;
    for (int r = remaining_.load(std::memory_order_acquire); r != 0;) r = wait_change(remaining_, r);
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  void record_error() {
    std::lock_guard lk(error_mu_);
    if (!error_) error_ = std::current_exception();
  }
  void work(int tid) {
    t_in_team = true;
    uint64_t seen = 0;
    for (;;) {
      seen = wait_change(generation_, seen);
      if (stop_.load()) return;
      const int nt = nt_;
      if (tid < nt) {
        const int cpu = sched_getcpu();
        if (cpu >= 0 && cpu == caller_cpu_.load(std::memory_order_relaxed) && step_off_cpu(cpu))
          g_stats_stepped_aside.fetch_add(1, std::memory_order_relaxed);
        try {
          (*body_)(tid, nt);
        } catch (...) {
          record_error();
        }
      }
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_;  // one team at a time
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> remaining_{0};
  std::atomic<int> caller_cpu_{-1};  // the CPU the fork's caller ran on (published by generation_'s release)
  const std::function<void(int, int)>* body_ = nullptr;
  int nt_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex error_mu_;
  std::exception_ptr error_;
};

Pool& pool() {
  static Pool p(default_team_size());
  return p;
}

std::atomic<int> g_max_threads{0};  // 0: the pool's size

ForkBackoff g_backoff;
std::atomic<int64_t> g_stats_parallel{0}, g_stats_backed_off{0}, g_stats_backoffs{0}, g_stats_join_wait_ns{0};
std::atomic<bool> g_backoff_on{[] {
  const char* e = std::getenv("SPECSCOPE_MATMUL_BACKOFF");
  return !(e && std::string(e) == "0");
}()};

}  // namespace

int team_size() {
  const int cap = g_max_threads.load(std::memory_order_relaxed);
  return cap > 0 ? std::min(cap, pool().size()) : pool().size();
}

// The fork/join back-off: engine/cpu/fork_backoff.h.
int team_threads_for(int units, size_t macs, size_t min_parallel_macs) {
  const int max_threads = t_in_team ? 1 : team_size();
  return int(std::min<size_t>({size_t(max_threads), size_t(std::max(units, 1)),
                               macs / std::max<size_t>(min_parallel_macs, 1) + 1}));
}

void run_team(int units, size_t macs, size_t min_parallel_macs, const std::function<void(int, int)>& body) {
  const int nthreads = team_threads_for(units, macs, min_parallel_macs);
  if (nthreads <= 1) {
    body(0, 1);
    return;
  }
  const bool backoff = g_backoff_on.load(std::memory_order_relaxed);
  const int64_t now = nanos_now();
  if (backoff && g_backoff.in_force(now)) {
    g_stats_backed_off.fetch_add(1, std::memory_order_relaxed);
    body(0, 1);
    return;
  }
  int64_t master_start = 0, master_done = 0;
  const std::function<void(int, int)> timed = [&](int tid, int nt) {
    if (tid == 0) master_start = nanos_now();
    body(tid, nt);
    if (tid == 0) master_done = nanos_now();
  };
  if (!pool().run(nthreads, timed)) {  // another thread's team is running
    body(0, 1);
    return;
  }
  g_stats_parallel.fetch_add(1, std::memory_order_relaxed);
  const int64_t end = nanos_now();
  g_stats_join_wait_ns.fetch_add(end - master_done, std::memory_order_relaxed);
  if (!backoff) return;
  const int64_t waited = (master_start - now) + (end - master_done), worked = master_done - master_start;
  if (g_backoff.on_join(end, waited, worked, nthreads)) g_stats_backoffs.fetch_add(1, std::memory_order_relaxed);
}

bool step_off_cpu(int cpu) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || !CPU_ISSET(cpu, &allowed) || CPU_COUNT(&allowed) < 2)
    return false;
  cpu_set_t elsewhere = allowed;
  CPU_CLR(cpu, &elsewhere);
  if (sched_setaffinity(0, sizeof elsewhere, &elsewhere) != 0) return false;
  sched_setaffinity(0, sizeof allowed, &allowed);
  return true;
}

void hold_backoff(int64_t nanos) { g_backoff.hold_until(nanos_now() + nanos); }

int set_num_threads(int n) { return g_max_threads.exchange(std::max(n, 0)); }

ThreadingStats threading_stats() {
  return {g_stats_parallel.load(), g_stats_backed_off.load(), g_stats_backoffs.load(), g_stats_stepped_aside.load(),
          g_stats_join_wait_ns.load()};
}

bool set_backoff(bool on) {
  g_backoff.reset();
  return g_backoff_on.exchange(on);
}

}  // namespace specscope::cpu
