#include "engine/cpu/fork_backoff.h"

#include <algorithm>

namespace specscope::cpu {

// Relaxed atomics: callers on several threads may report at once (one team at a time, but in_force is read by
// every caller); a lost update only shifts the account by one call.
bool ForkBackoff::on_join(Nanos end, Nanos waited, Nanos worked, int nt) {
  const Nanos saved = worked * std::max(nt - 1, 0);
  const Nanos credit = std::min(credit_.load(std::memory_order_relaxed) + saved - waited, kCreditCap);
  if (credit >= 0) {
    credit_.store(credit, std::memory_order_relaxed);
    return false;
  }
  const Nanos last_end = until_.load(std::memory_order_relaxed);
  const bool again_soon = last_end != 0 && end - last_end < kEscalateWithin;
  const int level = again_soon ? std::min(level_.load(std::memory_order_relaxed) + 1, kMaxLevel) : 0;
  level_.store(level, std::memory_order_relaxed);
  until_.store(end + (kShortest << level), std::memory_order_relaxed);
  credit_.store(kRetryCredit, std::memory_order_relaxed);
  return true;
}

void ForkBackoff::reset() {
  until_.store(0);
  level_.store(0);
  credit_.store(kRetryCredit);
}

}  // namespace specscope::cpu
