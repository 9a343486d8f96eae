#pragma once
// The engine's one team of threads. Every parallel part of a forward (linear layers of every weight type,
// attention, the OpenBLAS path, which runs OpenBLAS single-threaded on each member's share) forks through
// run_team(), so there is no second pool inside BLAS or OpenMP to spin beside it.
//
// Waiting: after its part, a worker watches for the next fork (SPECSCOPE_SPIN_US, default 1,000 us, long enough to
// span the gap between two decoding steps, so a step's first fork does not pay a futex wake-up, which costs
// 64-256 us on this virtual machine), then sleeps on a futex (C++20 atomic wait). After its first 20 us of
// watching it yields the core at every look, so a core that another process (the drafter's own work, the app's
// renderer, a build) wants is handed over instead of spun on. The caller waits for the join the same way. A
// worker that finds itself on its caller's core moves to another (step_off_cpu). When the team
// loses more time waiting for preempted workers than it saves (cores taken by other processes), calls run on the
// caller alone for a while (the fork/join back-off, engine/cpu/fork_backoff.h).
#include <cstddef>
#include <cstdint>
#include <functional>

namespace specscope::cpu {

// Threads in the team: SPECSCOPE_THREADS or OMP_NUM_THREADS when set, else the CPUs this process may run on
// (its affinity mask), capped by set_num_threads().
int team_size();

// Runs body(tid, nt) on nt threads, tid 0 on the caller, and returns when all have finished. nt is sized for
// the call: one thread below min_parallel_macs multiply-adds, at most one per work unit, at most team_size(),
// one while the back-off is in force, and one when called from inside a team (or while another thread's team
// runs: two sequences on two threads never wait for each other). Results must not depend on nt.
void run_team(int units, size_t macs, size_t min_parallel_macs, const std::function<void(int tid, int nt)>& body);

// The nt run_team would start with for these arguments, before the back-off (which may still run it on one).
int team_threads_for(int units, size_t macs, size_t min_parallel_macs);

// run_team over work units that are shared out while the call runs (engine/cpu/unit_shares.h): each member starts
// on its own contiguous range of the units [0, units) (first_unit(tid, nt) is where member tid's starts; default
// units * tid / nt) and claims it front to back; a member whose range runs out takes the back half of what is left
// of the fullest other range. body(u0, u1) computes units [u0, u1), on whichever member claimed them: it must
// compute a unit the same whoever runs it and whatever else the call holds (results must not depend on the split).
// Forks below ~4M multiply-adds keep the static split (unit_shares.cpp says why).
void run_team_units(int units, size_t macs, size_t min_parallel_macs, const std::function<void(int u0, int u1)>& body,
                    const std::function<int(int tid, int nt)>& first_unit = {});

// Off: run_team_units gives each member exactly its starting range, as run_team's static splits do (for A/B
// measurements; SPECSCOPE_UNIT_SHARING=0 starts with it off). Returns the previous setting.
bool set_unit_sharing(bool on);

// The smallest fork (in multiply-adds) whose units are shared out; smaller ones keep the static split. 0: the
// default (unit_shares.cpp). For A/B measurements; returns the previous value.
size_t set_unit_sharing_min_macs(size_t macs);

// Moves the calling thread off `cpu` at once and leaves its affinity mask as it was; false when it may run on no
// other CPU. A worker that finds itself on the core of the thread that forked calls it: the two would otherwise take
// turns on one core (the worker's share waiting for the caller's to end) while the other core idles, and the
// scheduler does not part them by itself, since neither stays runnable long enough for the load balancer to see two
// tasks on one core (measured here: caller and worker both on CPU 1 for whole prompts, joins 50-100 us late, and
// the back-off then running the team on one thread). Narrowing the mask migrates the thread before the call returns;
// widening it again does not move it back.
bool step_off_cpu(int cpu);

// Sets the team's thread cap (results do not depend on it); 0: team_size()'s default. Returns the previous cap.
int set_num_threads(int n);

// Counters since start: calls that ran on several threads, calls kept on one thread by the fork/join back-off,
// how many times the back-off started, how many times a worker found itself on its caller's core and moved, and the
// time callers waited at joins.
struct ThreadingStats {
  int64_t parallel_calls = 0, backed_off_calls = 0, backoffs = 0, stepped_aside = 0;
  // Nanoseconds callers spent waiting at joins after finishing their own share (all calling threads together): the
  // team's imbalance, which `bench`'s step profile reports per forward.
  int64_t join_wait_ns = 0;
};
ThreadingStats threading_stats();
// Turns the fork/join back-off on or off (and clears its state); returns the previous setting.
// SPECSCOPE_MATMUL_BACKOFF=0 starts with it off.
bool set_backoff(bool on);
// The back-off off for a scope, and the previous setting back (its state cleared) at its end: for measurements of
// the whole team (the roofline, bench's step profile), which one slow join before them would otherwise make
// one-thread measurements.
class BackoffOffScope {
 public:
  BackoffOffScope() : was_(set_backoff(false)) {}
  ~BackoffOffScope() { set_backoff(was_); }
  BackoffOffScope(const BackoffOffScope&) = delete;
  BackoffOffScope& operator=(const BackoffOffScope&) = delete;

 private:
  bool was_;
};
// Puts the back-off in force for the next `nanos` nanoseconds, as a join slowed by a preempted member would (for
// tests of code that must measure the whole team whatever the back-off's state).
void hold_backoff(int64_t nanos);

}  // namespace specscope::cpu
