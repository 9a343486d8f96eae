// The inspector timeline's geometry (ui/inspector/timeline_view.h): zoom about the cursor, pan, the window kept
// inside the run, the zoom kept while live steps stream in, and the selection.
#include "ui/inspector/timeline_view.h"

#include <gtest/gtest.h>

using specscope::ui::TimelineView;

namespace {
constexpr double kX0 = 100, kX1 = 900;  // an 800-pixel timeline
}

TEST(TimelineView, UnzoomedItShowsEveryStep) {
  TimelineView t;
  t.setStepCount(40);
  EXPECT_FALSE(t.zoomed());
  EXPECT_DOUBLE_EQ(t.first(), 0);
  EXPECT_DOUBLE_EQ(t.span(), 40);
  EXPECT_EQ(t.indexAt(kX0, kX0, kX1), 0);
  EXPECT_EQ(t.indexAt(kX1 - 1, kX0, kX1), 39);
  EXPECT_EQ(t.indexAt(kX0 + 20 * 10 + 5, kX0, kX1), 10);  // 20 px a step
  EXPECT_DOUBLE_EQ(t.xOf(10, kX0, kX1), kX0 + 200);
  t.panBy(50, kX0, kX1);  // nothing to pan
  EXPECT_DOUBLE_EQ(t.first(), 0);
}

TEST(TimelineView, TheWheelZoomsAboutTheCursor) {
  TimelineView t;
  t.setStepCount(100);
  const double x = kX0 + 600;
  const double under = t.stepAt(x, kX0, kX1);
  t.zoomAt(x, 3, kX0, kX1);
  ASSERT_TRUE(t.zoomed());
  EXPECT_NEAR(t.span(), 100 * 0.8 * 0.8 * 0.8, 1e-9);
  EXPECT_NEAR(t.stepAt(x, kX0, kX1), under, 1e-9);  // the step under the cursor stays under it
  // Deep zoom stops at four steps; zooming out past everything shows everything, unzoomed.
  t.zoomAt(x, 40, kX0, kX1);
  EXPECT_DOUBLE_EQ(t.span(), TimelineView::kMinSpan);
  t.zoomAt(x, -60, kX0, kX1);
  EXPECT_FALSE(t.zoomed());
  EXPECT_DOUBLE_EQ(t.span(), 100);
}

TEST(TimelineView, DraggingPansWithinTheRun) {
  TimelineView t;
  t.setStepCount(100);
  t.showWindow(40, 20);  // 40 px a step
  t.panBy(80, kX0, kX1);  // the steps follow the mouse to the right: earlier steps come into view
  EXPECT_DOUBLE_EQ(t.first(), 38);
  t.panBy(-4000, kX0, kX1);
  EXPECT_DOUBLE_EQ(t.first(), 80);  // not past the last step
  t.panBy(10000, kX0, kX1);
  EXPECT_DOUBLE_EQ(t.first(), 0);
  EXPECT_DOUBLE_EQ(t.span(), 20);
}

TEST(TimelineView, TheZoomStaysWhileStepsStreamIn) {
  TimelineView t;
  t.setStepCount(50);
  t.showWindow(40, 10);  // on the newest steps
  t.setStepCount(60);
  EXPECT_TRUE(t.zoomed());
  EXPECT_DOUBLE_EQ(t.span(), 10);
  EXPECT_DOUBLE_EQ(t.first(), 50);  // slid on with them
  t.showWindow(5, 10);  // further back: stays put
  t.setStepCount(70);
  EXPECT_DOUBLE_EQ(t.first(), 5);
  EXPECT_DOUBLE_EQ(t.span(), 10);
  // Unzoomed, new steps keep fitting in.
  t.showAll();
  t.setStepCount(80);
  EXPECT_DOUBLE_EQ(t.span(), 80);
}

TEST(TimelineView, TheSelectionIsOrderedAndClamped) {
  TimelineView t;
  t.setStepCount(30);
  EXPECT_FALSE(t.hasSelection());
  t.select(12, 4);
  ASSERT_TRUE(t.hasSelection());
  EXPECT_EQ(t.selectionFirst(), 4);
  EXPECT_EQ(t.selectionLast(), 12);
  t.select(25, 99);
  EXPECT_EQ(t.selectionLast(), 29);
  t.clearSelection();
  EXPECT_FALSE(t.hasSelection());
  EXPECT_EQ(t.selectionFirst(), -1);
}
