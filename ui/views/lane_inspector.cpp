#include "ui/views/lane_inspector.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSplitter>
#include <QVBoxLayout>

#include "ui/inspector/tree_inspector_widget.h"
#include "ui/inspector/why_panel.h"

namespace specscope::ui {

LaneInspector::LaneInspector(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  auto* row = new QHBoxLayout;
  lanes_ = new QComboBox;
  lanes_->setObjectName("inspectedLane");
  follow_ = new QCheckBox(tr("Follow live"));
  follow_->setToolTip(tr("Stay on this lane's newest step while the race runs"));
  auto* close = new QPushButton(tr("Hide"));
  row->addWidget(new QLabel(tr("Inspecting")));
  row->addWidget(lanes_);
  row->addWidget(follow_);
  row->addStretch(1);
  row->addWidget(close);
  v->addLayout(row);
  tree_ = new TreeInspectorWidget;
  tree_->setObjectName("laneInspector");
  auto* split = new QSplitter;  // the tree, and the "why" of the node clicked in it
  split->addWidget(tree_);
  auto* why = new WhyPanel;
  why->setObjectName("laneWhyPanel");
  why->attach(tree_);
  split->addWidget(why);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  v->addWidget(split, 1);

  connect(lanes_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i != lane_) showLane(i, follow_->isChecked() ? -1 : store_ && i >= 0 && i < store_->lanes()
                                                              ? int(store_->lane(i).steps.size()) - 1 : -1);
  });
  connect(follow_, &QCheckBox::toggled, tree_, &TreeInspectorWidget::setFollowLive);
  // Scrubbing the inspector's own timeline leaves live, as it does in the chat.
  connect(tree_, &TreeInspectorWidget::currentStepChanged, this, [this] {
    const QSignalBlocker b(follow_);
    follow_->setChecked(tree_->followsLive());
  });
  connect(close, &QPushButton::clicked, this, &LaneInspector::closeRequested);
}

void LaneInspector::setLanes(const QStringList& labels) {
  {
    const QSignalBlocker b(lanes_);
    lanes_->clear();
    for (int i = 0; i < labels.size(); ++i) lanes_->addItem(tr("lane %1 · %2").arg(i + 1).arg(labels[i]));
  }
  lane_ = -1;
  shown_steps_ = 0;
  tree_->clear();
}

void LaneInspector::showLane(int lane, int step) {
  if (!store_ || lane < 0 || lane >= store_->lanes()) return;
  const int before = lane_;
  lane_ = lane;
  {
    const QSignalBlocker b(lanes_);
    lanes_->setCurrentIndex(lane);
  }
  const auto& steps = store_->lane(lane).steps;
  // The lane already shown, with every step it has: only move (its timeline keeps its zoom and selected range).
  if (lane != before || shown_steps_ != int(steps.size()) || tree_->stepCount() != int(steps.size())) {
    shown_steps_ = int(steps.size());
    tree_->setSteps(steps);  // follows the newest step
  } else if (step < 0) {
    tree_->setFollowLive(true);
  }
  if (step >= 0) tree_->setCurrentStep(step);
  const QSignalBlocker b(follow_);
  follow_->setChecked(tree_->followsLive());
}

void LaneInspector::laneStepAppended(int lane) {
  if (lane != lane_ || !store_) return;
  const auto& steps = store_->lane(lane).steps;
  while (shown_steps_ < int(steps.size())) tree_->appendStep(steps[size_t(shown_steps_++)]);
}

bool LaneInspector::followsLive() const { return tree_->followsLive(); }
void LaneInspector::setDark(bool dark) { tree_->setDarkTheme(dark); }

}  // namespace specscope::ui
