#pragma once
// The draft-tree inspector: Dear ImGui drawn inside a QOpenGLWidget. The current step's tree is laid out by
// depth; each node shows its token, is filled by draft confidence on a colour-blind-safe perceptual scale and
// marked accepted / rejected / not reached / pruned / bonus; edges carry probabilities; hovering shows token
// id, draft p, target p, acceptance probability and cumulative score; pan (drag), zoom (wheel), fit (F or
// double-click). Under it a step timeline (a bar per step, its height the accepted length) scrubbed with the
// mouse or the arrow keys; it follows the live run until the user scrubs, and again after End.
#include <QOpenGLWidget>
#include <QString>
#include <memory>
#include <vector>

#include "engine/methods/step_record.h"

struct ImVec2;

namespace specscope::ui {

class TreeInspectorWidget : public QOpenGLWidget {
  Q_OBJECT
 public:
  explicit TreeInspectorWidget(QWidget* parent = nullptr);
  ~TreeInspectorWidget() override;

  void clear();
  void appendStep(const StepRecord& step);       // live: shows it when following
  void setSteps(std::vector<StepRecord> steps);  // a whole run (replay), shows the last step
  void setCurrentStep(int index);                // clamps; stops following unless it is the last step
  int currentStep() const;                       // -1 when empty (an index into the steps, not a step number)
  // Replay: the recorded run's last step number, the header's total while steps are still being fed in; the
  // "live" marks are hidden. -1: a live run (the default).
  void setRecordedLastStep(int step);
  QString headerTitle() const;  // "Step 47 / 73": the current StepRecord's number and the last one's
  bool liveShown() const;       // the timeline says "● live"
  int stepCount() const;
  bool followsLive() const;
  void setFollowLive(bool follow);
  void fitView();
  void setDarkTheme(bool dark);
  void setCompact(bool compact);
  // New steps repaint at most this often (default 20/s; 0: every step); input always repaints at once.
  void setLiveFrameRateLimit(int fps);  // miniature mode for compare lanes: no timeline, no labels, no tooltips

  // Evidence for tests and benchmarks.
  int nodesDrawnLastFrame() const;  // node boxes submitted to ImGui's draw lists in the last paint
  long long framesDrawn() const;
  bool exportPng(const QString& path);        // the widget's framebuffer
  bool exportSvg(const QString& path) const;  // the current step's tree as SVG, written directly

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void currentStepChanged(int index);

 protected:
  void initializeGL() override;
  void resizeGL(int w, int h) override;
  void paintGL() override;
  bool event(QEvent* e) override;  // input goes to the Qt-to-ImGui adapter

 private:
  void releaseGL();  // the GL context is going away (destruction or reparenting): free the backend's objects
  void rebuildFonts(qreal devicePixelRatio);
  void drawFrame();
  void drawHeader();
  void drawTree(const ImVec2& size);
  void drawLegend();
  void drawTimeline();
  void stepBy(int delta, bool fromFrame);
  void moveTo(int index, bool follow, bool fromFrame);

  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace specscope::ui
