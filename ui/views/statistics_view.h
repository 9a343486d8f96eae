#pragma once
// Statistics (Qt Charts) over one or more runs: accepted-length histogram, acceptance rate by depth, draft
// confidence against actual acceptance (a calibration curve, as in EAGLE-2's analysis), tokens/s over time,
// and the draft/verify time split. Each run is one series (one colour per lane), named by its lane label, so a
// race's lanes overlay in every chart. Linked to the other views through the app's StepFocus (step_focus.h): a
// range of steps selected on a timeline filters every chart to those steps ("steps A–B of N"; other lanes of a
// race to the same text), and a click on a point of the per-step throughput chart opens that step.
#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include "runs/cost_model.h"
#include "runs/step_cost.h"
#include "runs/run_statistics.h"
#include "runs/trace_store.h"

namespace specscope::ui {

class StepFocus;

class StatisticsView : public QWidget {
  Q_OBJECT
 public:
  explicit StatisticsView(QWidget* parent = nullptr);
  ~StatisticsView() override;
  // Redraws every chart from these runs (copied what it needs; the traces may change afterwards).
  void setRuns(const std::vector<const runs::RunTrace*>& runs);
  bool exportPng(const QString& path);  // the whole view
  // This machine's step-cost curve for a target (RunTrace::target): runs on it then show the cost model beside
  // their measured speedup (expected speedup, the sentence naming the losing term) and the curve with their tree
  // sizes marked. Kept for later setRuns calls; takes effect at the next one.
  void setStepCost(const QString& target_path, const runs::StepCost& cost);
  // Qt Charts' dark or light theme for every chart, the runs keeping their colours (black turns light grey).
  void setDark(bool dark);
  bool dark() const;
  // The selection model the view reads its range from and opens clicked steps through (may be null).
  void setStepFocus(StepFocus* focus);

  // Evidence for tests: what the charts were drawn from.
  runs::RunStatistics shownStatistics(int run) const;  // run: the position in setRuns' list
  double shownTau(int run) const;
  // The cost model beside the measured speedup, over the steps counted (the selected range's when there is one);
  // nullopt without the target's step-cost curve. The measured speedup: 0 without a reference run.
  std::optional<runs::RunCostModel> shownCostModel(int run) const;
  double shownMeasuredSpeedup(int run) const;
  QString costModelText() const;  // the cost model's lines as shown (rich text)
  QString rangeText() const;  // "Steps 4–9 of 23 (eagle2)…"; empty when every step counts
  // Where the throughput chart drew the point of step `step` (an index) of run `run`, in its viewport's
  // coordinates; (-1, -1) when it has none (the prefill, the moving average's first steps, steps without time).
  QPoint throughputPoint(int run, int step) const;

 signals:
  void stepClicked(int run, int step);  // a point of the per-step chart was clicked (also opened through the focus)

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void redraw();
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace specscope::ui
