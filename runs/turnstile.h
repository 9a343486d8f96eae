#pragma once
// Round-robin turns for interleaved lanes: lane i runs one step, then passes the turn on; finished lanes leave
// the rotation. Only one lane computes at a time, so their timings stay comparable and they never fight for
// the cores. Blocking waits on a condition variable (no spinning).
#include <condition_variable>
#include <mutex>
#include <vector>

namespace specscope::runs {

class Turnstile {
 public:
  explicit Turnstile(int lanes);
  void wait_turn(int lane);  // returns when it is `lane`'s turn (or after release_all)
  void pass(int lane);       // `lane` finished a step: the next active lane's turn
  void leave(int lane);      // `lane` finished its run
  void release_all();        // cancel: nobody waits any more
  int turn() const;

 private:
  void advance(int from);
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> active_;
  int turn_ = 0;
  bool released_ = false;
};

}  // namespace specscope::runs
