#pragma once
// When the thread team's fork/join should stop forking and run each call on the caller alone: the decision,
// apart from the clock and the threads, so that it can be tested with made-up times.
//
// When the cores are busy with other processes, a join waits for a preempted team member to be scheduled again:
// measured here, ~8 ms per call (a 1 ms step took 336 ms with 2 threads under a load of 3 on 2 cores, while 1
// thread took ~3 ms). So the caller keeps an account of what the team saved and what it cost: each call that
// ran on nt threads saved about nt - 1 times the caller's own share (the work the others did beside it) and
// cost whatever the caller waited at the fork and the join. Good calls bank at most kCreditCap; when the
// account goes below zero, the team has lost more than it saved, and every call runs on one thread for a while,
// then threads are tried again with kRetryCredit in the account (enough for the wake-up of the sleeping members,
// too little to hide a member that waits for a core for milliseconds).
//
// An account rather than a count of slow joins: this virtual machine delays a spinning member by 50-100 us now
// and then on a quiet machine (its vCPU descheduled by the host), and two such joins in a row, each "slower than
// the caller alone", started back-offs that doubled up to 256 ms and ran whole prompts on one thread (shipped
// base, 5 held-out prompts, 3 lanes: 33,950 of 33,973 calls on one thread, vanilla 1,080 tok/s where the team
// gives ~2,000). A stray delay costs its 100 us once; a busy core costs milliseconds on every call, which empties
// any credit within a call or two.
//
// The while starts at 16 ms and doubles, up to 256 ms, each time the back-off starts again within a second of
// the last one ending: a lasting load is probed with slow joins only a few times a second.
#include <atomic>
#include <cstdint>

namespace specscope::cpu {

class ForkBackoff {
 public:
  using Nanos = int64_t;  // a monotonic clock's reading, or a duration
  static constexpr Nanos kCreditCap = 2'000'000;    // saved time banked against later waits, at most
  static constexpr Nanos kRetryCredit = 1'000'000;  // the account when threads are tried again
  static constexpr Nanos kShortest = 16'000'000;    // the first back-off
  static constexpr int kMaxLevel = 4;               // 16 ms << 4 = 256 ms
  static constexpr Nanos kEscalateWithin = 1'000'000'000;

  ForkBackoff() { reset(); }
  // Whether calls starting at `now` run on one thread.
  bool in_force(Nanos now) const { return now < until_.load(std::memory_order_relaxed); }
  // One call that ran on a team of `nt` threads and ended at `end`: the caller waited `waited` at its fork and join
  // and worked `worked` on its own share. Returns true when this join started a back-off.
  bool on_join(Nanos end, Nanos waited, Nanos worked, int nt);
  // Forgets every back-off and starts the account at kRetryCredit.
  void reset();
  // Puts a back-off in force until `until` (what a slow join does; for tests).
  void hold_until(Nanos until) { until_.store(until, std::memory_order_relaxed); }
  // The length of the back-off in force or last in force.
  Nanos last_length() const { return kShortest << level_.load(std::memory_order_relaxed); }
  // The account now (for tests and diagnostics).
  Nanos credit() const { return credit_.load(std::memory_order_relaxed); }

 private:
  std::atomic<Nanos> until_{0};
  std::atomic<Nanos> credit_{0};
  std::atomic<int> level_{0};
};

}  // namespace specscope::cpu
