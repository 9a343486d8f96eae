#pragma once
// Live steps to the views at two paces (issue 18: "answers do not stream"). The text (the chat's transcript,
// a race lane's text and stat line) is what a user reads and costs little to update, so it follows the run on
// a fixed clock, kTextIntervalMs, however busy the machine is. The trees (the inspector, the lanes'
// miniatures) cost a software-rendered frame each, so they follow a FrameBudget on their own drawing CPU: as
// often as kTreeBudget of a core allows, and at least every kMaxTreeIntervalMs. Before, one budgeted clock
// drove both, and on a busy machine a 9-second answer showed its text twice: every repaint then composed the
// whole window with OpenGL, so the text was as dear as a tree (ui/inspector/offscreen_gl.h).
// flush() hands over every step not yet shown, to both: the end of a run is always drawn whole.
#include <QElapsedTimer>
#include <QObject>
#include <QTimer>
#include <functional>
#include <vector>

#include "ui/main/frame_budget.h"

namespace specscope::ui {

class LivePacer : public QObject {
  Q_OBJECT
 public:
  // Called with a lane and the index of a step in it, in order, each step once per sink.
  using Sink = std::function<void(int lane, int index)>;
  using CpuClock = std::function<double()>;        // milliseconds of CPU, monotonic
  static constexpr int kTextIntervalMs = 66;       // 15 text updates a second: well above the 10 that read as live
  static constexpr int kMaxTreeIntervalMs = 1000;  // the trees' slowest pace, whatever the budget says
  static constexpr double kTreeBudget = 0.02;      // the trees' share of one core while a run is live

  // tree_cpu: the CPU the trees' frames have used so far (TreeInspectorWidget::renderCpuMs).
  LivePacer(Sink text, Sink tree, CpuClock tree_cpu, QObject* parent = nullptr);
  void start(int lanes);                // a live run with this many lanes starts: nothing shown yet
  void stepAdded(int lane, int count);  // lane `lane` now holds `count` steps
  void flush();                         // everything not yet shown, to both sinks, now
  void flushTrees();                    // the trees catch up with the text (a click on a token asks for its step)
  // Off (View > Draw runs live): steps are only counted, and shown at the next flush().
  void setEnabled(bool on) { enabled_ = on; }
  bool enabled() const { return enabled_; }

 private:
  void send_text();
  void send_trees();
  Sink text_, tree_;
  CpuClock tree_cpu_;
  bool enabled_ = true;
  std::vector<int> count_, text_shown_, tree_shown_;  // per lane
  QTimer text_timer_, tree_timer_;
  QElapsedTimer since_text_;
  bool first_text_ = true;  // a run's first text waits for no clock tick
  FrameBudget budget_;
};

}  // namespace specscope::ui
