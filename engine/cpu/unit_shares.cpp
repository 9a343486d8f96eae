#include "engine/cpu/unit_shares.h"

#include <cstdlib>
#include <functional>
#include <string>

#include "engine/cpu/thread_pool.h"

namespace specscope::cpu {

namespace {

uint32_t front_of(uint64_t r) { return uint32_t(r >> 32); }
uint32_t back_of(uint64_t r) { return uint32_t(r); }

// Below this many multiply-adds a fork runs in the static split: sharing costs about half a microsecond a fork (the
// claims' compare-and-swaps, the cache lines they move between cores, a kernel call per claim), which on the shipped
// base's one-token forks, 5-20 us each, was 5% of its decoding (bench/results/cpu_unit_sharing_2026-12-01/), while
// the imbalance it removes grows with a fork's length.
constexpr size_t kMinSharedMacs = size_t(1) << 22;
std::atomic<size_t> g_min_shared_macs{kMinSharedMacs};

std::atomic<bool> g_sharing{[] {
  const char* e = std::getenv("SPECSCOPE_UNIT_SHARING");
  return !(e && std::string(e) == "0");
}()};

}  // namespace

void UnitShares::reserve(int nt) {
  if (nt <= capacity_) return;
  slots_ = std::make_unique<Slot[]>(size_t(nt));
  capacity_ = nt;
}

int UnitShares::left(int i) const {
  const uint64_t r = slots_[i].range.load(std::memory_order_relaxed);
  return front_of(r) < back_of(r) ? int(back_of(r) - front_of(r)) : 0;
}

bool UnitShares::claim(int tid, int* u0, int* u1) {
  std::atomic<uint64_t>& own = slots_[tid].range;
  for (;;) {
    uint64_t r = own.load(std::memory_order_relaxed);
    while (front_of(r) < back_of(r)) {
      const uint32_t f = front_of(r), n = back_of(r) - f;
      const uint32_t take = n - n / 4;  // three quarters, rounded up: a few long claims, the last ones short
      if (own.compare_exchange_weak(r, pack(f + take, back_of(r)), std::memory_order_relaxed)) {
        *u0 = int(f);
        *u1 = int(f + take);
        return true;
      }
    }
    if (!steal(tid)) return false;  // own range refilled: claim from it
  }
}

bool UnitShares::steal(int tid) {
  for (;;) {
    int victim = -1;
    uint32_t most = 0;
    for (int i = 0; i < nt_; ++i) {
      if (i == tid) continue;
      const uint32_t n = uint32_t(left(i));
      if (n > most) most = n, victim = i;
    }
    if (victim < 0) return false;
    std::atomic<uint64_t>& v = slots_[victim].range;
    uint64_t r = v.load(std::memory_order_relaxed);
    const uint32_t f = front_of(r), b = back_of(r);
    if (f >= b) continue;  // emptied since the look: look again
    const uint32_t take = (b - f + 1) / 2;
    if (!v.compare_exchange_strong(r, pack(f, b - take), std::memory_order_relaxed)) continue;
    // [b - take, b) is this member's now: it becomes its range (others may take from its back in turn), and its
    // claims come from it as from any own range. The own slot is empty here, and only its owner refills it.
    slots_[tid].range.store(pack(b - take, b), std::memory_order_relaxed);
    return true;
  }
}

bool set_unit_sharing(bool on) { return g_sharing.exchange(on); }

size_t set_unit_sharing_min_macs(size_t macs) { return g_min_shared_macs.exchange(macs ? macs : kMinSharedMacs); }

namespace {

// What a fork's members need, behind one pointer: a lambda capturing just that fits std::function's inline buffer,
// so a fork allocates nothing (capturing the four by reference would allocate once per fork).
struct UnitsFork {
  int units, nt;
  const std::function<void(int, int)>& body;
  const std::function<int(int, int)>& first_unit;
  UnitShares* shares;  // null in the static split

  int start(int tid, int n) const {
    return tid == 0 ? 0 : first_unit ? first_unit(tid, n) : int(int64_t(units) * tid / n);
  }
};

}  // namespace

void run_team_units(int units, size_t macs, size_t min_parallel_macs, const std::function<void(int, int)>& body,
                    const std::function<int(int, int)>& first_unit) {
  if (units <= 0) return;
  const int nt = team_threads_for(units, macs, min_parallel_macs);
  if (nt <= 1) {
    body(0, units);
    return;
  }
  if (!g_sharing.load(std::memory_order_relaxed) || macs < g_min_shared_macs.load(std::memory_order_relaxed)) {
    const UnitsFork fork{units, nt, body, first_unit, nullptr};
    run_team(units, macs, min_parallel_macs, [f = &fork](int tid, int n) {
      const int u0 = f->start(tid, n), u1 = tid + 1 < n ? f->start(tid + 1, n) : f->units;
      if (u0 < u1) f->body(u0, u1);
    });
    return;
  }
  // The caller's shares (passed by pointer: a thread_local named in the lambda would be each worker's own).
  thread_local UnitShares own;
  const UnitsFork fork{units, nt, body, first_unit, &own};
  own.reset(nt, units, [&](int i) { return fork.start(i, nt); });
  run_team(units, macs, min_parallel_macs, [f = &fork](int tid, int n) {
    if (n == 1) {  // the back-off, or another thread's team running: the caller alone, all of it
      f->body(0, f->units);
      return;
    }
    // n is nt here (the same arguments); were it not (the thread cap changed in between), the claims still cover
    // every unit once: members past n never start, and their ranges are stolen; members past nt only wait.
    if (tid >= f->nt) return;
    for (int u0, u1; f->shares->claim(tid, &u0, &u1);) f->body(u0, u1);
  });
}

}  // namespace specscope::cpu
