#pragma once
// Abandoning a forward in flight. A decoding loop's Stop is checked between steps, but a long prompt's prefill is
// a single forward that can take seconds on a large model. The caller installs a stop flag for its thread
// (InterruptScope); a forward checks it between decoder layers (check_interrupt) and throws Interrupted, which
// leaves the context as it was before the call (its KV cache only counts a forward that finished). Thread-local,
// so concurrent lanes each answer to their own flag, and nothing in the forward's signature changes.
#include <atomic>
#include <exception>

namespace specscope {

class Interrupted : public std::exception {
 public:
  const char* what() const noexcept override { return "interrupted"; }
};

namespace detail {
inline thread_local const std::atomic<bool>* interrupt_flag = nullptr;
}

// While alive, forwards on this thread stop at the next layer once *flag is true; nullptr: not interruptible.
// Scopes nest (the previous flag comes back on exit).
class InterruptScope {
 public:
  explicit InterruptScope(const std::atomic<bool>* flag) : prev_(detail::interrupt_flag) { detail::interrupt_flag = flag; }
  ~InterruptScope() { detail::interrupt_flag = prev_; }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  const std::atomic<bool>* prev_;
};

inline void check_interrupt() {
  const std::atomic<bool>* f = detail::interrupt_flag;
  if (f && f->load(std::memory_order_relaxed)) throw Interrupted();
}

}  // namespace specscope
