#pragma once
// Statistics (Qt Charts) over one or more runs: accepted-length histogram, acceptance rate by depth, draft
// confidence against actual acceptance (a calibration curve, as in EAGLE-2's analysis), tokens/s over time,
// and the draft/verify time split. Each run is one series (one colour per lane), named by its lane label, so a
// race's lanes overlay in every chart.
#include <QWidget>
#include <memory>
#include <vector>

#include "runs/step_cost.h"
#include "runs/trace_store.h"

namespace specscope::ui {

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

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace specscope::ui
