#include "engine/cpu/thread_pool.h"

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

const std::chrono::nanoseconds kSpin = std::chrono::microseconds(env_int("SPECSCOPE_SPIN_US", 50));

// Spins on `a` while it equals `old` for kSpin, then sleeps on it (futex) until it changes.
template <typename T>
T wait_change(const std::atomic<T>& a, T old) {
  T v = a.load(std::memory_order_acquire);
  if (v != old) return v;
  const auto until = Clock::now() + kSpin;
  for (int i = 0;; ++i) {
    v = a.load(std::memory_order_acquire);
    if (v != old) return v;
    if ((i & 63) == 63 && Clock::now() > until) break;
    cpu_relax();
  }
  for (;;) {
    a.wait(old, std::memory_order_acquire);
    v = a.load(std::memory_order_acquire);
    if (v != old) return v;
  }
}

thread_local bool t_in_team = false;

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

  // False when another thread's team is running: the caller then runs alone.
  bool run(int nt, const std::function<void(int, int)>& body) {
    std::unique_lock lk(mu_, std::try_to_lock);
    if (!lk.owns_lock()) return false;
    body_ = &body;
    nt_ = nt;
    error_ = nullptr;
    // Every worker acknowledges every fork, in the team or not: the next fork cannot be published before each
    // has seen this one, so none can mistake one fork's parameters for another's.
    remaining_.store(size() - 1, std::memory_order_relaxed);
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

// Fork/join back-off state.
std::atomic<int64_t> g_backoff_until{0};  // steady_clock ticks
std::atomic<int> g_slow_joins{0};
std::atomic<int64_t> g_stats_parallel{0}, g_stats_backed_off{0}, g_stats_backoffs{0};
std::atomic<bool> g_backoff_on{[] {
  const char* e = std::getenv("SPECSCOPE_MATMUL_BACKOFF");
  return !(e && std::string(e) == "0");
}()};

}  // namespace

int team_size() {
  const int cap = g_max_threads.load(std::memory_order_relaxed);
  return cap > 0 ? std::min(cap, pool().size()) : pool().size();
}

// When the cores are busy with other processes, the join waits for a preempted thread to be scheduled again:
// measured here, ~8 ms per call (a 1 ms step took 336 ms with 2 threads under a load of 3 on 2 cores, while 1
// thread took ~3 ms). So the caller's thread times its waits at the fork and the join, and after two calls in
// a row that waited over 50 us and longer than its own share of the work took, every call runs single-threaded
// for the next 250 ms, then tries threads again.
void run_team(int units, size_t macs, size_t min_parallel_macs, const std::function<void(int, int)>& body) {
  const int max_threads = t_in_team ? 1 : team_size();
  const int nthreads = int(std::min<size_t>({size_t(max_threads), size_t(std::max(units, 1)),
                                             macs / std::max<size_t>(min_parallel_macs, 1) + 1}));
  if (nthreads <= 1) {
    body(0, 1);
    return;
  }
  const bool backoff = g_backoff_on.load(std::memory_order_relaxed);
  const int64_t now = Clock::now().time_since_epoch().count();
  if (backoff && now < g_backoff_until.load(std::memory_order_relaxed)) {
    g_stats_backed_off.fetch_add(1, std::memory_order_relaxed);
    body(0, 1);
    return;
  }
  int64_t master_start = 0, master_done = 0;
  const std::function<void(int, int)> timed = [&](int tid, int nt) {
    if (tid == 0) master_start = Clock::now().time_since_epoch().count();
    body(tid, nt);
    if (tid == 0) master_done = Clock::now().time_since_epoch().count();
  };
  if (!pool().run(nthreads, timed)) {  // another thread's team is running
    body(0, 1);
    return;
  }
  g_stats_parallel.fetch_add(1, std::memory_order_relaxed);
  if (!backoff) return;
  const int64_t end = Clock::now().time_since_epoch().count();
  const int64_t waited = (master_start - now) + (end - master_done), worked = master_done - master_start;
  const int64_t ms = std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds(1)).count();
  const int64_t floor = std::chrono::duration_cast<Clock::duration>(std::chrono::microseconds(50)).count();
  // Waiting longer than the caller's own share took means the team was slower than the caller alone would have
  // been. A worker that had to be woken (it slept while a method drafted) or preempted (another process has the
  // core) costs tens to hundreds of microseconds, small in absolute terms but many times a decoding step's
  // share of work, so the floor is 50 us, not a millisecond.
  if (waited > floor && waited > worked) {
    if (g_slow_joins.fetch_add(1, std::memory_order_relaxed) + 1 >= 2) {
      g_backoff_until.store(end + 250 * ms, std::memory_order_relaxed);
      g_stats_backoffs.fetch_add(1, std::memory_order_relaxed);
      g_slow_joins.store(0, std::memory_order_relaxed);
    }
  } else {
    g_slow_joins.store(0, std::memory_order_relaxed);
  }
}

int set_num_threads(int n) { return g_max_threads.exchange(std::max(n, 0)); }

ThreadingStats threading_stats() {
  return {g_stats_parallel.load(), g_stats_backed_off.load(), g_stats_backoffs.load()};
}

bool set_backoff(bool on) {
  g_backoff_until.store(0);
  g_slow_joins.store(0);
  return g_backoff_on.exchange(on);
}

}  // namespace specscope::cpu
