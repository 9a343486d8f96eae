#pragma once
// Replays a recorded run step by step at the pace it was recorded (or faster), following a run that another
// process is still recording until it finishes.
#include <functional>

#include "sessions/reader.h"

namespace specscope::sessions {

struct ReplayOptions {
  double speed = 1.0;         // 1: the recorded pace (each step's recorded time); 2: twice as fast; <= 0: no waiting
  bool follow = true;         // keep reading new steps while the run's status is "recording"
  int poll_ms = 20;           // how often to look for new steps while following
  double idle_timeout_s = 5;  // stop following a run that made no progress this long (its recorder died)
};

// Calls fn for each step in order; fn returns false to stop. Returns the number of steps replayed.
int64_t replay_run(SessionReader& reader, int64_t run_id, const ReplayOptions& opts,
                   const std::function<bool(const RecordedStep&)>& fn);

}  // namespace specscope::sessions
