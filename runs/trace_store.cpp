#include "runs/trace_store.h"

#include <algorithm>

namespace specscope::runs {

void TraceStore::reset(std::vector<RunTrace> lanes) {
  for (auto& l : lanes) {
    l.steps.clear();
    l.pieces.clear();
    l.tokens_before.clear();
    l.summary.reset();
  }
  lanes_ = std::move(lanes);
}

void TraceStore::append(int lane, const StepRecord& step, const std::string& piece) {
  RunTrace& t = lanes_.at(size_t(lane));
  t.tokens_before.push_back(t.tokens());
  t.steps.push_back(step);
  t.pieces.push_back(piece);
}

void TraceStore::finish(int lane, const RunSummary& summary) { lanes_.at(size_t(lane)).summary = summary; }

int TraceStore::step_at_token(int lane, int token) const {
  if (lane < 0 || lane >= lanes() || token < 0) return -1;
  const RunTrace& t = lanes_[size_t(lane)];
  if (token >= t.tokens()) return -1;
  // The last step that started at or before `token`; steps that commit nothing (a stop) never hold a token.
  auto it = std::upper_bound(t.tokens_before.begin(), t.tokens_before.end(), token);
  int step = int(it - t.tokens_before.begin()) - 1;
  while (step > 0 && t.steps[size_t(step)].committed.empty()) --step;
  return step;
}

}  // namespace specscope::runs
