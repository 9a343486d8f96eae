#include "ui/main/linked_views.h"

#include <QObject>
#include <vector>

#include "ui/engine/replay_controller.h"
#include "ui/engine/step_focus.h"
#include "ui/engine/step_notes.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/main/main_window.h"
#include "ui/main/presenter_mode.h"
#include "ui/views/compare_view.h"
#include "ui/views/statistics_view.h"

namespace specscope::ui {

namespace {

// A race has two lanes or more (the Compare tab shows it); a chat or a single run has one (the Chat tab does).
bool is_race(const MainWindow& w) { return w.traces().lanes() >= 2; }

std::vector<const runs::RunTrace*> all_runs(const MainWindow& w) {
  std::vector<const runs::RunTrace*> out;
  for (const auto& t : w.traces().all()) out.push_back(&t);
  return out;
}

}  // namespace

void link_views(MainWindow& w, StepFocus& focus) {
  TreeInspectorWidget* chat_tree = w.inspector();
  TreeInspectorWidget* lane_tree = w.compare()->laneInspector();
  CompareView* compare = w.compare();
  w.statistics()->setStepFocus(&focus);
  compare->setStepFocus(&focus);

  // Asked for a step: the inspector that holds its lane shows it, in front.
  QObject::connect(&focus, &StepFocus::openRequested, &w, [&w, chat_tree, compare](int lane, int step) {
    if (is_race(w)) {
      compare->inspectLane(lane, step);
      w.showTab("compare");
    } else {
      chat_tree->setCurrentStep(step);
      w.showTab("chat");
    }
  });
  // The inspectors' own moves (scrubbing, keys, live steps) and range selections.
  QObject::connect(chat_tree, &TreeInspectorWidget::currentStepChanged, &focus, [&w, &focus](int index) {
    if (!is_race(w) && index >= 0) focus.follow(0, index);
  });
  QObject::connect(lane_tree, &TreeInspectorWidget::currentStepChanged, &focus, [compare, &focus](int index) {
    if (compare->inspectedLane() >= 0 && index >= 0) focus.follow(compare->inspectedLane(), index);
  });
  QObject::connect(chat_tree, &TreeInspectorWidget::rangeSelected, &focus, [&w, &focus](int first, int last) {
    if (first < 0) focus.clearRange();
    else if (!is_race(w)) focus.selectRange(0, first, last);
  });
  QObject::connect(lane_tree, &TreeInspectorWidget::rangeSelected, &focus, [compare, &focus](int first, int last) {
    if (first < 0) focus.clearRange();
    else if (compare->inspectedLane() >= 0) focus.selectRange(compare->inspectedLane(), first, last);
  });
  // The range, wherever it was set or cleared, to every view that shows it.
  QObject::connect(&focus, &StepFocus::rangeChanged, &w, [&w, chat_tree, lane_tree, compare](const StepSelection& r) {
    const bool race = is_race(w);
    if (!race && r.valid() && r.lane == 0) chat_tree->setSelectedRange(r.first, r.last);
    else chat_tree->setSelectedRange(-1, -1);
    if (race && r.valid() && r.lane == compare->inspectedLane()) lane_tree->setSelectedRange(r.first, r.last);
    else lane_tree->setSelectedRange(-1, -1);
    // The statistics count the steps the store holds now (a live or replayed run may not have finished).
    w.statistics()->setRuns(all_runs(w));
  });
}

void show_session_notes(MainWindow& w, PresenterMode& presenter, const std::string& text) {
  const SessionNotes notes = parse_session_notes(text);
  w.inspector()->setNotes(notes);
  w.compare()->laneInspector()->setNotes(notes);
  presenter.setNotes(notes);
}

}  // namespace specscope::ui
