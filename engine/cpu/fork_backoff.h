#pragma once
// When the thread team's fork/join should stop forking and run each call on the caller alone: the decision,
// apart from the clock and the threads, so that it can be tested with made-up times.
//
// When the cores are busy with other processes, a join waits for a preempted team member to be scheduled again:
// measured here, ~8 ms per call (a 1 ms step took 336 ms with 2 threads under a load of 3 on 2 cores, while 1
// thread took ~3 ms). So the caller times its waits at the fork and the join, and after two calls in a row that
// waited over 50 us and longer than its own share of the work took (the team was slower than the caller alone
// would have been), every call runs on one thread for a while, then threads are tried again.
//
// The while starts at 16 ms and doubles, up to 256 ms, each time the back-off starts again within a second of
// the last one ending: a one-off stall (page faults in a process's first forward, a short burst elsewhere on
// the machine) costs a few tokens, and a lasting load is probed with slow joins only a few times a second.
// A join that waited for a member woken from its futex sleep (after a pause between forwards, while a method
// drafted or sampled) counts only when it waited over a millisecond: a wake-up onto an idle core takes tens of
// microseconds and says nothing about the cores being taken (counting it made the back-off fire on a quiet
// machine and run whole prompts on one thread: 1,377 instead of 1,958 tok/s on the shipped base), while a
// wake-up onto a core another process holds waits for the scheduler, milliseconds.
#include <atomic>
#include <cstdint>

namespace specscope::cpu {

class ForkBackoff {
 public:
  using Nanos = int64_t;  // a monotonic clock's reading
  static constexpr Nanos kSlowFloor = 50'000;        // a wait shorter than this is never slow
  static constexpr Nanos kSlowFloorWoken = 1'000'000;  // nor, when a member had to be woken, one under this
  static constexpr Nanos kShortest = 16'000'000;     // the first back-off
  static constexpr int kMaxLevel = 4;                // 16 ms << 4 = 256 ms
  static constexpr Nanos kEscalateWithin = 1'000'000'000;

  // Whether calls starting at `now` run on one thread.
  bool in_force(Nanos now) const { return now < until_.load(std::memory_order_relaxed); }
  // One call that ran on the team and ended at `end`: the caller waited `waited` at its fork and join and
  // worked `worked` on its own share; `woken`: a member had been asleep before the fork. Returns true when this
  // join started a back-off.
  bool on_join(Nanos end, Nanos waited, Nanos worked, bool woken);
  // Forgets every slow join and back-off.
  void reset();
  // The length of the back-off in force or last in force.
  Nanos last_length() const { return kShortest << level_.load(std::memory_order_relaxed); }

 private:
  std::atomic<Nanos> until_{0};
  std::atomic<int> slow_joins_{0};
  std::atomic<int> level_{0};
};

}  // namespace specscope::cpu
