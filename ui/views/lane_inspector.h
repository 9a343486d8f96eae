#pragma once
// The full tree inspector for a race's lanes, under the lanes in the Compare tab: a click on a lane's miniature
// opens that lane's step here; "Follow live" keeps it on the lane's newest step as the race runs; the lane
// combo switches lanes. Steps come from the main window's runs::TraceStore.
#include <QStringList>
#include <QWidget>

#include "runs/trace_store.h"

class QCheckBox;
class QComboBox;

namespace specscope::ui {

class TreeInspectorWidget;

class LaneInspector : public QWidget {
  Q_OBJECT
 public:
  explicit LaneInspector(QWidget* parent = nullptr);
  void setStore(const runs::TraceStore* store) { store_ = store; }
  void setLanes(const QStringList& labels);  // a new race: lane names for the combo, nothing shown
  // Shows `lane` at `step`; step -1 follows the lane's newest step.
  void showLane(int lane, int step);
  void laneStepAppended(int lane);  // the store has a new step of `lane`
  int lane() const { return lane_; }
  bool followsLive() const;
  TreeInspectorWidget* tree() const { return tree_; }
  void setDark(bool dark);

 signals:
  void closeRequested();

 private:
  const runs::TraceStore* store_ = nullptr;
  QComboBox* lanes_;
  QCheckBox* follow_;
  TreeInspectorWidget* tree_;
  int lane_ = -1;
  int shown_steps_ = 0;  // steps of lane_ handed to the tree
};

}  // namespace specscope::ui
