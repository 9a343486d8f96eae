#pragma once
// Compare: a race of 2 to 4 lanes on one prompt and sampling. Each lane has its own method, target, drafter and
// options (RaceLane, LaneEditor), so eagle2 | medusa | streaming runs as is: streaming on its own target. Every
// lane's speedup and verdict is against vanilla on that lane's own target (the runner's reference runs, shown
// on the reference line). One cursor over the text position scrubs all lanes together (RaceCursor); a click
// on a miniature or on a lane's text opens that step in the full inspector below the lanes (LaneInspector), through
// the app's StepFocus when it has one (step_focus.h: the main window shows it). The view reads the
// main window's runs::TraceStore and keeps no statistics of its own.
#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include "engine/methods/step_record.h"
#include "runs/job.h"
#include "runs/lane_resolver.h"
#include "runs/trace_store.h"

namespace specscope::ui {

struct AppSettings;
class RaceCursor;
class StepFocus;
class TreeInspectorWidget;

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  ~CompareView() override;
  void setTraceStore(const runs::TraceStore* store);
  void setSettings(const AppSettings& settings);  // the lane editors' placeholders
  // Clicks on a lane's miniature or text open their step through `focus` (null: straight in the lane inspector).
  void setStepFocus(StepFocus* focus);

  std::vector<runs::LaneRequest> laneRequests() const;
  void setLaneMethods(const std::vector<std::string>& methods);  // 2..4, every other field left to defaults
  void setLanes(const std::vector<runs::Lane>& lanes);          // a recorded race's lanes (replay)
  QString prompt() const;
  void setPrompt(const QString& p);
  bool interleaved() const;
  void setInterleaved(bool on);

  // A run's life, driven by the main window (live) or the replay controller. The store already holds a step
  // when laneStep is called for it.
  void runStarted(const std::vector<runs::Lane>& lanes, bool greedy);
  void referenceStarted(const QString& target);
  void referenceFinished(const QString& target, const RunSummary& summary);
  void laneStep(int lane, const StepRecord& step, const QString& piece);  // both of:
  void laneStepText(int lane, const StepRecord& step, const QString& piece);  // the lane's text and stat line
  void setLaneReplyShape(int lane, const ReplyShape& shape);  // how the lane's reply marks its reasoning
  void laneStepTree(int lane, const StepRecord& step);  // its miniature, the inspector, the cursor's step
  void laneFinished(int lane, const RunSummary& summary, std::optional<bool> identical);
  void runFinished(bool cancelled);
  void setBusy(bool busy);
  void setDark(bool dark);

  // The cursor and the inspector.
  RaceCursor* cursor() const;
  void inspectLane(int lane, int step);  // opens the inspector on it; step -1 follows the lane live
  TreeInspectorWidget* laneInspector() const;
  int inspectedLane() const;  // -1 when the inspector is closed
  TreeInspectorWidget* laneMiniature(int lane) const;
  int laneShownStep(int lane) const;        // the miniature's step
  int laneHighlightedStep(int lane) const;  // the step marked in the lane's text

  QString verdict() const;
  QString referenceLine() const;
  QString laneText(int lane) const;
  QString laneTitle(int lane) const;
  QString laneStatLine(int lane) const;
  QString markdownTable() const;  // the comparison table, for the clipboard or a file
  int laneNodesDrawn(int lane) const;

 signals:
  void runRequested();
  void stopRequested();

 private:
  void apply_cursor();  // every lane (and the inspector) to the cursor's token
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace specscope::ui
