#pragma once
// The inspector's step timeline as a profiler's (Tracy's): which steps it shows, zoomed about the cursor with the
// wheel and panned by dragging, and the range of steps selected (shift-drag or right-drag). Geometry only, in the
// caller's pixels, with no Qt and no ImGui, so the drawing and the input handling agree and a unit test can check
// it. The window is [first, first + span) in steps (fractional: a zoom keeps the step under the cursor in place).
// Live steps keep streaming in while zoomed: the zoom level stays, and a window that showed the newest step slides
// on with it.
namespace specscope::ui {

class TimelineView {
 public:
  static constexpr double kMinSpan = 4.0;  // the deepest zoom: four steps across the timeline

  void setStepCount(int steps);
  int stepCount() const { return steps_; }
  bool zoomed() const { return zoomed_; }
  double first() const { return zoomed_ ? first_ : 0.0; }
  double span() const { return zoomed_ ? span_ : double(steps_ > 0 ? steps_ : 1); }
  void showAll() { zoomed_ = false; }
  // Shows steps [first, first + span) (clamped).
  void showWindow(double first, double span);

  // Pixels: the bars run from x0 to x1.
  double stepAt(double x, double x0, double x1) const;  // fractional step under x
  int indexAt(double x, double x0, double x1) const;    // the bar under x, clamped to the steps
  double xOf(double step, double x0, double x1) const;  // a step's left edge
  // Wheel notches (> 0 zooms in) about the pixel x.
  void zoomAt(double x, double notches, double x0, double x1);
  // A drag by dx pixels: the steps move with the mouse.
  void panBy(double dx, double x0, double x1);

  // The selected steps, inclusive; -1 when none.
  void select(int a, int b);
  void clearSelection() { sel_first_ = sel_last_ = -1; }
  bool hasSelection() const { return sel_first_ >= 0; }
  int selectionFirst() const { return sel_first_; }
  int selectionLast() const { return sel_last_; }

 private:
  void clamp();
  int steps_ = 0;
  bool zoomed_ = false;
  double first_ = 0, span_ = 1;
  int sel_first_ = -1, sel_last_ = -1;
};

}  // namespace specscope::ui
