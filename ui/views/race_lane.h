#pragma once
// One lane of a race in the Compare tab: its editor (method, target, drafter, options), its text coloured by
// provenance, its current tree in miniature, and a stat line. The numbers come from the main window's
// runs::TraceStore while the lane runs (summarize() and compute_tokens_per_second over its steps) and from the
// runner when it ends (speedup and verdict against vanilla on the lane's own target); the lane keeps none.
// Hovering the miniature shows its step in words; a click on it, or on a token of the lane's text, asks for that
// step in the full inspector.
#include <QGroupBox>
#include <optional>

#include "engine/methods/step_record.h"
#include "runs/job.h"
#include "runs/trace_store.h"

class QLabel;

namespace specscope::ui {

class LaneEditor;
class TokenTextView;
class TreeInspectorWidget;

class RaceLane : public QGroupBox {
  Q_OBJECT
 public:
  RaceLane(int index, QWidget* parent = nullptr);
  LaneEditor* editor() const { return editor_; }
  TokenTextView* text() const { return text_; }
  TreeInspectorWidget* miniature() const { return tree_; }
  void setStore(const runs::TraceStore* store) { store_ = store; }

  void begin(const runs::Lane& lane);  // a new run: title, empty text and tree
  void appendStep(const StepRecord& step, const QString& piece);  // appendText and appendTree
  void appendText(const StepRecord& step, const QString& piece);  // the text and the stat line
  void appendTree(const StepRecord& step);                        // the miniature
  void finish(const RunSummary& summary, std::optional<bool> identical, bool greedy);
  // The step to show (the race cursor): -1 follows the newest step.
  void showStep(int step);
  int shownStep() const;
  QString statLine() const;
  void setDark(bool dark);
  void setBusy(bool busy);
  // The step as a tooltip: what was drafted, accepted and committed, and what it cost.
  static QString describeStep(const runs::RunTrace& trace, int step);

 signals:
  void miniatureClicked(int lane, int step);
  void textStepClicked(int lane, int step);  // a token of the lane's text was clicked: the step that made it

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  const runs::RunTrace* trace() const;
  int index_;
  const runs::TraceStore* store_ = nullptr;
  std::string target_;
  LaneEditor* editor_;
  TokenTextView* text_;
  TreeInspectorWidget* tree_;
  QLabel* stats_;
};

}  // namespace specscope::ui
