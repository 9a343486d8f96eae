#include "ui/engine/step_focus.h"

#include <algorithm>

namespace specscope::ui {

StepFocus::StepFocus(QObject* parent) : QObject(parent) {}

void StepFocus::open(int lane, int step) {
  if (lane < 0 || step < 0) return;
  const bool changed = lane != lane_ || step != step_;
  lane_ = lane;
  step_ = step;
  emit openRequested(lane, step);
  if (changed) emit currentChanged(lane, step);
}

void StepFocus::follow(int lane, int step) {
  if (lane == lane_ && step == step_) return;
  lane_ = lane;
  step_ = step;
  emit currentChanged(lane, step);
}

void StepFocus::selectRange(int lane, int first, int last) {
  if (first > last) std::swap(first, last);
  const StepSelection next{lane, first, last};
  if (!next.valid()) return clearRange();
  if (next == range_) return;
  range_ = next;
  emit rangeChanged(range_);
}

void StepFocus::clearRange() {
  if (!range_.valid()) return;
  range_ = {};
  emit rangeChanged(range_);
}

void StepFocus::reset() {
  lane_ = step_ = -1;
  clearRange();
}

runs::StepSpan span_in_lane(const runs::TraceStore& store, const StepSelection& sel, int lane) {
  if (!sel.valid() || lane < 0 || lane >= store.lanes() || sel.lane >= store.lanes()) return {0, -1};
  if (lane == sel.lane) return {sel.first, sel.last};
  const runs::RunTrace& from = store.lane(sel.lane);
  const int n = int(from.steps.size());
  if (sel.first >= n) return {0, -1};
  const int last = std::min(sel.last, n - 1);
  // Generated tokens [begin, end) committed by the selected steps.
  const int begin = from.tokens_before[size_t(sel.first)];
  const int end = from.tokens_before[size_t(last)] + int(from.steps[size_t(last)].committed.size());
  if (end <= begin) return {0, -1};
  const int a = store.step_at_token(lane, begin);
  if (a < 0) return {0, -1};  // the other lane has not generated that text (yet)
  int b = store.step_at_token(lane, end - 1);
  if (b < 0) b = int(store.lane(lane).steps.size()) - 1;  // it ended short: up to its last step
  return {a, b};
}

}  // namespace specscope::ui
