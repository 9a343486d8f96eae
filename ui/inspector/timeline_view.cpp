#include "ui/inspector/timeline_view.h"

#include <algorithm>
#include <cmath>

namespace specscope::ui {

void TimelineView::setStepCount(int steps) {
  const int before = steps_;
  steps_ = std::max(0, steps);
  // A zoomed window that showed the newest step keeps showing it (its zoom level unchanged); one further back
  // stays where it is.
  if (zoomed_ && steps_ > before && first_ + span_ >= double(before) - 0.5) first_ = double(steps_) - span_;
  if (sel_first_ >= steps_) clearSelection();
  else if (sel_last_ >= steps_) sel_last_ = steps_ - 1;
  clamp();
}

void TimelineView::showWindow(double first, double span) {
  zoomed_ = true;
  first_ = first;
  span_ = span;
  clamp();
}

void TimelineView::clamp() {
  if (!zoomed_) return;
  const double n = double(std::max(steps_, 1));
  span_ = std::clamp(span_, std::min(kMinSpan, n), n);
  first_ = std::clamp(first_, 0.0, n - span_);
  if (span_ >= n) zoomed_ = false;  // everything is shown: not zoomed, and new steps keep fitting in
}

double TimelineView::stepAt(double x, double x0, double x1) const {
  const double w = std::max(x1 - x0, 1.0);
  return first() + (x - x0) / w * span();
}

int TimelineView::indexAt(double x, double x0, double x1) const {
  if (steps_ <= 0) return -1;
  return std::clamp(int(std::floor(stepAt(x, x0, x1))), 0, steps_ - 1);
}

double TimelineView::xOf(double step, double x0, double x1) const {
  return x0 + (step - first()) / span() * (x1 - x0);
}

void TimelineView::zoomAt(double x, double notches, double x0, double x1) {
  if (steps_ <= 0 || notches == 0) return;
  const double at = stepAt(x, x0, x1);
  const double fraction = std::clamp((x - x0) / std::max(x1 - x0, 1.0), 0.0, 1.0);
  const double span = this->span() * std::pow(0.8, notches);
  zoomed_ = true;
  first_ = at - fraction * span;
  span_ = span;
  clamp();
}

void TimelineView::panBy(double dx, double x0, double x1) {
  if (!zoomed_) return;
  first_ -= dx / std::max(x1 - x0, 1.0) * span_;
  clamp();
}

void TimelineView::select(int a, int b) {
  if (steps_ <= 0) return clearSelection();
  if (a > b) std::swap(a, b);
  sel_first_ = std::clamp(a, 0, steps_ - 1);
  sel_last_ = std::clamp(b, 0, steps_ - 1);
}

}  // namespace specscope::ui
