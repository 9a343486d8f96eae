#include "kernels/op_timer.h"

#include <spdlog/spdlog.h>

#include "kernels/cuda_check.h"

namespace specscope::cuda {

void OpTimer::mark(const char* what, cudaStream_t stream) {
  if (!on_) return;
  if (names_.size() == events_.size()) {
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreate(&e));
    events_.push_back(e);
  }
  CUDA_CHECK(cudaEventRecord(events_[names_.size()], stream));
  names_.push_back(what);
}

void OpTimer::collect(int n) {
  if (!on_) return;
  auto& ops = ms_[n];
  for (size_t i = 0; i + 1 < names_.size(); ++i) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]));
    ops[names_[i]] += ms;
  }
  forwards_[n] += 1;
  names_.clear();
}

OpTimer::~OpTimer() {
  for (const auto& [n, ops] : ms_) {
    double total = 0;
    std::string line;
    for (const auto& [op, ms] : ops) total += ms;
    for (const auto& [op, ms] : ops)
      line += fmt::format(" {} {:.3f} ({:.0f}%),", op, ms / forwards_[n], 100.0 * ms / std::max(total, 1e-9));
    spdlog::info("cuda profile: {} rows, {} forwards, {:.3f} ms each:{}", n, forwards_[n], total / forwards_[n],
                 line.substr(0, line.size() - 1));
  }
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

}  // namespace specscope::cuda
