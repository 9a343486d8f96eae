#pragma once
// Work units shared out among a team while a fork runs (run_team_units, thread_pool.h).
//
// Why: a static split gives each thread an equal share of a matrix's rows, but two threads never stream memory at
// the same speed for long on this VM (one core's sibling busy on the host, one memory channel further away), so at
// every join one waits for the other: on a 1B F16 decode 1.3 ms of each 60 ms token in 81 joins, 2%, and 3 ms of an
// 8-token forward's 108 (`specscope-cli bench`'s step profile, "waiting at their joins"). A thread that is
// descheduled while another process takes its core holds up the whole step for its time slice.
//
// How: each member keeps the one long front-to-back stream of its own range (the memory prefetchers follow one
// stream per thread best: bench/results/one_row_stream_2026-11-28.txt), claiming three quarters of what is left of
// it at a time, so a range is a handful of claims; a member that runs out takes the back half of what is left
// unclaimed in the fullest other range, which then becomes its own range, open to others in the same way. Claims
// are compare-and-swap on one 64-bit word per member, each in its own cache line.
#include <atomic>
#include <cassert>
#include <cstdint>
#include <memory>

namespace specscope::cpu {

class UnitShares {
 public:
  // Empty; reset() before use. Not copyable (holds atomics).
  UnitShares() = default;
  UnitShares(const UnitShares&) = delete;
  UnitShares& operator=(const UnitShares&) = delete;

  // Ranges [start[i], start[i + 1]) for members 0..nt-1, with start[0] = 0 and start[nt] = units; start must be
  // non-decreasing. Not safe while members claim.
  template <class Start>
  void reset(int nt, int units, Start start) {
    reserve(nt);
    nt_ = nt;
    for (int i = 0; i < nt; ++i) {
      const int front = start(i), back = i + 1 < nt ? start(i + 1) : units;
      assert(0 <= front && front <= back && back <= units);  // a range that went backwards would lose units
      slots_[i].range.store(pack(uint32_t(front), uint32_t(back)), std::memory_order_relaxed);
    }
  }

  // Member tid's next units [*u0, *u1): from its own range, else stolen; false when every range is empty.
  bool claim(int tid, int* u0, int* u1);

  // Units left unclaimed in member i's range (steal() picks its victim by it; tests check it).
  int left(int i) const;

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> range{0};  // front << 32 | back: units [front, back) not yet claimed
  };
  static uint64_t pack(uint32_t front, uint32_t back) { return uint64_t(front) << 32 | back; }
  void reserve(int nt);
  // Moves the back half of the fullest other range into member tid's (empty) slot; false when all are empty.
  bool steal(int tid);

  std::unique_ptr<Slot[]> slots_;
  int capacity_ = 0, nt_ = 0;
};

}  // namespace specscope::cpu
