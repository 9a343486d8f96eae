#include "sessions/replay.h"

#include <chrono>
#include <thread>

namespace specscope::sessions {

int64_t replay_run(SessionReader& reader, int64_t run_id, const ReplayOptions& opts,
                   const std::function<bool(const RecordedStep&)>& fn) {
  using clock = std::chrono::steady_clock;
  int64_t next = 0;
  bool stopped = false;
  auto last_progress = clock::now();
  auto due = clock::now();  // when the next step may be shown
  for (;;) {
    const RunRow run = reader.run(run_id);  // status first: steps committed before "finished" are then all seen
    const int64_t available = reader.step_count(run_id);
    if (available > next) {
      reader.for_each_step(run_id, next, available, [&](RecordedStep&& s) {
        if (stopped) return;
        if (opts.speed > 0) {
          due += std::chrono::microseconds(int64_t(double(s.record.timings.total_us()) / opts.speed));
          std::this_thread::sleep_until(due);
        }
        ++next;
        if (!fn(s)) stopped = true;
      });
      last_progress = clock::now();
      if (stopped) break;
      continue;
    }
    if (!opts.follow || run.status != "recording") break;
    if (std::chrono::duration<double>(clock::now() - last_progress).count() > opts.idle_timeout_s) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(opts.poll_ms));
    due = clock::now();
  }
  return next;
}

}  // namespace specscope::sessions
