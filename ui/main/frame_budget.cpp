#include "ui/main/frame_budget.h"

#include <algorithm>
#include <ctime>

namespace specscope::ui {

void FrameBudget::start(double wall, double cpu) {
  start_wall_ = wall;
  start_cpu_ = cpu;
  last_cpu_ = cpu;
  started_ = true;
}

void FrameBudget::frame_drawn(double, double cpu) {
  if (!started_) return;
  const double cost = cpu - last_cpu_;
  last_cpu_ = cpu;
  // Smooth, but follow a sudden expensive frame at once (a new tab, a resize): overspending is what costs.
  estimate_ = std::max(cost, 0.5 * estimate_ + 0.5 * cost);
}

double FrameBudget::next_delay_ms(double wall, double cpu) const {
  if (!started_ || budget_ <= 0) return min_interval_;
  // The next frame may start when the CPU used so far plus its expected cost fits the budget.
  const double used = cpu - start_cpu_;
  const double allowed_at = start_wall_ + (used + estimate_) / budget_;
  return std::max(min_interval_, allowed_at - wall);
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

double wall_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

}  // namespace specscope::ui
