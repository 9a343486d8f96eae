#pragma once
// The draft-tree inspector: Dear ImGui drawn with OpenGL off screen and painted as an image by a plain widget
// (offscreen_gl.h says why it is not a QOpenGLWidget). The current step's tree is laid out by
// depth; each node shows its token, is filled by draft confidence on a colour-blind-safe perceptual scale and
// marked accepted / rejected / not reached / pruned / bonus; edges carry probabilities; hovering shows token
// id, draft p, target p, acceptance probability and cumulative score; pan (drag), zoom (wheel), fit (F or
// double-click). Under it a step timeline (a bar per step, its height the accepted length) scrubbed with the
// mouse or the arrow keys; it follows the live run until the user scrubs, and again after End. The timeline
// zooms about the cursor with the wheel, pans by dragging when zoomed, and selects a range of steps with a
// shift-drag or a right-drag (Escape or a double-click clears it), as a profiler's does (timeline_view.h).
// A session's notes on the shown step appear in the header, and every noted step is marked on the timeline.
#include <QImage>
#include <QString>
#include <QWidget>
#include <memory>
#include <utility>
#include <vector>

#include "engine/methods/step_record.h"
#include "runs/step_cost.h"
#include "ui/engine/step_notes.h"

struct ImVec2;

namespace specscope::ui {

class TreeInspectorWidget : public QWidget {
  Q_OBJECT
 public:
  explicit TreeInspectorWidget(QWidget* parent = nullptr);
  ~TreeInspectorWidget() override;

  void clear();
  void appendStep(const StepRecord& step);       // live: shows it when following
  void setSteps(std::vector<StepRecord> steps);  // a whole run (replay), shows the last step
  void setCurrentStep(int index);                // clamps; stops following unless it is the last step
  int currentStep() const;                       // -1 when empty (an index into the steps, not a step number)
  const StepRecord* currentRecord() const;       // the step shown; nullptr when none
  // The draft node the "why" panel explains: a click on a node selects it (and stops following live steps, as
  // scrubbing does), a click on the background clears it. It belongs to its step: -1 while another is shown.
  int selectedNode() const;
  void selectNode(int node);  // in the step shown; -1 clears
  QPoint nodePosition(int node) const;  // its centre in the last frame (widget coordinates); (-1, -1) if not drawn
  // Replay: the recorded run's last step number, the header's total while steps are still being fed in; the
  // "live" marks are hidden. -1: a live run (the default).
  void setRecordedLastStep(int step);
  QString headerTitle() const;  // "Step 47 / 73": the current StepRecord's number and the last one's
  // The cost model (runs/cost_model.h) for the steps shown: with this machine's step-cost curve for their target,
  // the header's tooltip breaks the shown step down. An empty curve (the default) turns it off.
  void setStepCost(const runs::StepCost& cost);
  // "verify 2.1 ms (7 tokens) + draft 0.9 ms for 3 tokens; vanilla would take 3.3 ms"; empty without a curve.
  QString stepCostText() const;
  bool liveShown() const;       // the timeline says "● live"
  int stepCount() const;
  bool followsLive() const;
  void setFollowLive(bool follow);
  void fitView();
  void setDarkTheme(bool dark);
  // Presenter mode: the high-contrast theme (ui/main/theme.h) over the dark or light one, and larger text.
  void setHighContrast(bool on);
  bool highContrast() const;
  void setFontScale(float scale);  // 1: the normal 14 px
  float uiFontPixels() const;      // the header's, legend's and timeline's text size (logical pixels)
  // The session's notes (step_notes.h): the shown step's in the header, every noted step marked on the timeline.
  void setNotes(const SessionNotes& notes);
  QString currentNote() const;  // the notes on the step shown; "" when none

  // The timeline's selected range (indices into the steps, inclusive); (-1, -1) when none. Setting it does not
  // emit rangeSelected (the caller knows).
  std::pair<int, int> selectedRange() const;
  void setSelectedRange(int first, int last);
  // The timeline's window: the steps [first, first + span) are shown; zoomed when not all of them.
  double timelineFirst() const;
  double timelineSpan() const;
  bool timelineZoomed() const;
  void showAllSteps();  // zooms the timeline out to every step
  QRect timelineBars() const;          // where the last frame drew the bars (widget coordinates); empty if not
  QPoint timelineBarPosition(int index) const;  // the centre of a step's bar; (-1, -1) when not shown
  void setCompact(bool compact);
  // New steps repaint at most this often (default 20/s; 0: every step); input always repaints at once.
  void setLiveFrameRateLimit(int fps);  // miniature mode for compare lanes: no timeline, no labels, no tooltips

  // Evidence for tests and benchmarks.
  int nodesDrawnLastFrame() const;  // node boxes submitted to ImGui's draw lists in the last paint
  long long framesDrawn() const;
  // CPU used drawing frames so far, by every inspector together (the GUI thread and the software
  // rasterizer's threads, ms): what the live trees' frame budget counts.
  static double renderCpuMs();
  bool exportPng(const QString& path);        // the widget's framebuffer
  QImage frame();                             // the current frame, drawn first if the view changed
  bool exportSvg(const QString& path) const;  // the current step's tree as SVG, written directly

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void currentStepChanged(int index);
  // The user selected steps first..last on the timeline (indices, inclusive), or cleared the selection (-1, -1).
  void rangeSelected(int first, int last);
  void nodeSelected(int index, int node);  // node -1: the selection was cleared

 protected:
  void paintEvent(QPaintEvent* e) override;  // the last frame, drawn anew only when the view changed
  bool event(QEvent* e) override;  // input goes to the Qt-to-ImGui adapter

 private:
  // A QOpenGLWidget's hooks, called by render() with the off-screen context current.
  void initializeGL();
  void resizeGL(int w, int h);
  void paintGL();
  void render(const QSize& pixels, qreal dpr);
  void requestFrame();  // the view changed: draw a new frame at the next paint
  void rebuildFonts(qreal devicePixelRatio);
  void drawFrame();
  void drawHeader();
  void drawTree(const ImVec2& size);
  void drawLegend();
  void drawTimeline();
  int nodeAt(QPointF pos) const;  // the draft node drawn at pos in the last frame, or -1
  bool timelineEvent(QEvent* e);  // wheel, drags, double-click and Escape on the timeline; true when used
  void endSelection(int first, int last);  // sets the timeline's selection and says so (rangeSelected)
  void stepBy(int delta, bool fromFrame);
  void moveTo(int index, bool follow, bool fromFrame);

  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace specscope::ui
