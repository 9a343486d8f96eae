#include "runs/turnstile.h"

namespace specscope::runs {

Turnstile::Turnstile(int lanes) : active_(size_t(lanes), true) {}

void Turnstile::wait_turn(int lane) {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return turn_ == lane || released_; });
}

void Turnstile::pass(int lane) {
  std::lock_guard lk(mu_);
  advance(lane);
  cv_.notify_all();
}

void Turnstile::leave(int lane) {
  std::lock_guard lk(mu_);
  active_[size_t(lane)] = false;
  if (turn_ == lane) advance(lane);
  cv_.notify_all();
}

void Turnstile::release_all() {
  std::lock_guard lk(mu_);
  released_ = true;
  cv_.notify_all();
}

int Turnstile::turn() const {
  std::lock_guard lk(mu_);
  return turn_;
}

void Turnstile::advance(int from) {
  const int n = int(active_.size());
  for (int k = 1; k <= n; ++k) {
    const int next = (from + k) % n;
    if (active_[size_t(next)]) {
      turn_ = next;
      return;
    }
  }
  turn_ = -1;
}

}  // namespace specscope::runs
