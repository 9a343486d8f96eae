#pragma once
// Where a CUDA forward's time goes, op by op, when SPECSCOPE_CUDA_PROFILE=1: CUDA events recorded on the stream
// between ops (no hardware counters needed, which the lent GPU machines may not give), summed per op and per
// forward size, and logged when the context closes as mean milliseconds per forward. Off by default: an event
// per op costs a few microseconds of launch time.
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

namespace specscope::cuda {

class OpTimer {
 public:
  explicit OpTimer(bool on) : on_(on) {}
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;
  ~OpTimer();  // logs the summary, then frees the events
  bool on() const { return on_; }
  // `what` starts here on the stream; the op marked before it ends here.
  void mark(const char* what, cudaStream_t stream);
  // After the forward has synchronised: each op's time (to the next mark) into the totals of an n-row forward.
  void collect(int n);

 private:
  bool on_;
  std::vector<cudaEvent_t> events_;  // a pool, reused forward after forward
  std::vector<const char*> names_;   // of the marks made in this forward
  std::map<int, std::map<std::string, double>> ms_;  // rows -> op -> total ms
  std::map<int, int> forwards_;
};

}  // namespace specscope::cuda
