#pragma once
// The app's one selection model, as a profiler has one (Tracy's): the step being looked at and the range of steps
// selected, per lane of the runs shown. Every view writes to it and listens to it instead of signalling each
// other: a chat token, a timeline bar, a compare lane's text, a statistics point all call open(); the main window
// shows the step in the inspector that holds that lane. A timeline's range selection calls selectRange(); the
// statistics filter to it and File > Export selected range as web page exports it.
// Steps are indices into a lane's runs::RunTrace::steps (the inspector's and the timeline's indices), not
// StepRecord::step numbers.
#include <QObject>

#include "runs/run_statistics.h"
#include "runs/trace_store.h"

namespace specscope::ui {

struct StepSelection {
  int lane = -1, first = -1, last = -1;  // inclusive; lane -1: nothing selected
  bool valid() const { return lane >= 0 && first >= 0 && last >= first; }
  bool operator==(const StepSelection&) const = default;
};

class StepFocus : public QObject {
  Q_OBJECT
 public:
  explicit StepFocus(QObject* parent = nullptr);
  int lane() const { return lane_; }
  int step() const { return step_; }  // -1: none
  const StepSelection& range() const { return range_; }

  // A view asks for the step to be shown in the inspector: openRequested, even when it is the current one (the
  // inspector may be on another tab).
  void open(int lane, int step);
  // The inspector moved on its own (scrubbing, arrow keys, following live): currentChanged when it differs.
  void follow(int lane, int step);
  void selectRange(int lane, int first, int last);  // in either order; rangeChanged when it differs
  void clearRange();
  void reset();  // a new run or replay: nothing current, nothing selected

 signals:
  void openRequested(int lane, int step);
  void currentChanged(int lane, int step);
  void rangeChanged(const specscope::ui::StepSelection& range);  // !range.valid(): cleared

 private:
  int lane_ = -1, step_ = -1;
  StepSelection range_;
};

// The part of lane `lane` that a selection made on another lane covers: lanes take different numbers of steps for
// the same text, so the generated tokens the selected steps committed are the shared axis (as the race cursor's).
// The selection's own lane gets its own steps. An empty span (first > last) when the lane has no such steps.
runs::StepSpan span_in_lane(const runs::TraceStore& store, const StepSelection& selection, int lane);

}  // namespace specscope::ui
