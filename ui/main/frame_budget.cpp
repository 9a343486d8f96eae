#include "ui/main/frame_budget.h"

#include <algorithm>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace specscope::ui {

void FrameBudget::start(double wall, double cpu) {
  start_wall_ = wall;
  start_cpu_ = cpu;
  last_cpu_ = cpu;
  last_wall_ = wall;
  started_ = true;
}

void FrameBudget::frame_drawn(double wall, double cpu) {
  if (!started_) return;
  const double cost = cpu - last_cpu_;
  last_cpu_ = cpu;
  last_wall_ = wall;
  // Smooth, but follow a sudden expensive frame at once (a new tab, a resize): overspending is what costs.
  estimate_ = std::max(cost, 0.5 * estimate_ + 0.5 * cost);
}

double FrameBudget::next_delay_ms(double wall, double cpu) const {
  if (!started_ || budget_ <= 0) return min_interval_;
  // The next frame may start when the CPU used so far plus its expected cost fits the budget.
  const double used = cpu - start_cpu_;
  const double allowed_at = std::min(start_wall_ + (used + estimate_) / budget_, last_wall_ + max_interval_);
  return std::max(min_interval_, allowed_at - wall);
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

double drawing_cpu_ms() {
  double ms = thread_cpu_ms();
  static const double tick_ms = 1000.0 / double(sysconf(_SC_CLK_TCK));
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name.rfind("llvmpipe", 0) != 0) continue;
    std::ifstream stat(task.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // Fields after the parenthesised name: state is field 3, utime 14, stime 15.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int f = 3; f <= 15 && rest >> field; ++f) {
      if (f == 14) utime = std::stoull(field);
      if (f == 15) stime = std::stoull(field);
    }
    ms += double(utime + stime) * tick_ms;
  }
  return ms;
}

double wall_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

}  // namespace specscope::ui
