// The app's one selection model (ui/engine/step_focus.h): open always asks (the inspector may be on another tab),
// follow and selectRange only say what changed, and span_in_lane maps a range on one lane of a race to the steps of
// another lane that made the same text.
#include "ui/engine/step_focus.h"

#include <gtest/gtest.h>

#include <QSignalSpy>

using namespace specscope;
using namespace specscope::ui;

namespace {

StepRecord step_with(int number, int tokens) {
  StepRecord s;
  s.step = number;
  s.root_token = number == 0 ? -1 : 1;
  s.committed.assign(size_t(tokens), 7);
  return s;
}

// Two lanes that make the same 13 tokens: lane 0 one a step (13 steps), lane 1 in 1, 3, 3, 3, 3 (5 steps).
runs::TraceStore race() {
  runs::RunTrace empty;
  empty.method = "x";
  runs::TraceStore store;
  store.reset({empty, empty});
  for (int i = 0; i < 13; ++i) store.append(0, step_with(i, 1), "a");
  int i = 0;
  for (int n : {1, 3, 3, 3, 3}) store.append(1, step_with(i++, n), "abc");
  return store;
}

}  // namespace

TEST(StepFocus, OpenAlwaysAsksFollowAndRangesSayWhatChanged) {
  StepFocus f;
  QSignalSpy opened(&f, &StepFocus::openRequested), current(&f, &StepFocus::currentChanged),
      ranges(&f, &StepFocus::rangeChanged);
  f.open(0, 4);
  f.open(0, 4);  // again: the inspector may be hidden on another tab
  EXPECT_EQ(opened.count(), 2);
  EXPECT_EQ(current.count(), 1);
  f.follow(0, 4);
  EXPECT_EQ(current.count(), 1);
  f.follow(1, 2);
  EXPECT_EQ(current.count(), 2);
  EXPECT_EQ(f.lane(), 1);
  EXPECT_EQ(f.step(), 2);
  f.selectRange(0, 9, 3);
  EXPECT_EQ(f.range(), (StepSelection{0, 3, 9}));
  f.selectRange(0, 3, 9);
  EXPECT_EQ(ranges.count(), 1);
  f.clearRange();
  f.clearRange();
  EXPECT_EQ(ranges.count(), 2);
  EXPECT_FALSE(f.range().valid());
  f.selectRange(-1, 1, 2);  // no lane: nothing selected
  EXPECT_FALSE(f.range().valid());
}

TEST(StepFocus, ARangeOnOneLaneCoversTheStepsOfAnotherThatMadeTheSameText) {
  const runs::TraceStore store = race();
  // Lane 1's steps 1..2 committed tokens 1..6: lane 0's steps 1..6.
  EXPECT_EQ(span_in_lane(store, {1, 1, 2}, 1).first, 1);
  EXPECT_EQ(span_in_lane(store, {1, 1, 2}, 1).last, 2);
  const runs::StepSpan other = span_in_lane(store, {1, 1, 2}, 0);
  EXPECT_EQ(other.first, 1);
  EXPECT_EQ(other.last, 6);
  // And back: lane 0's steps 4..5 (tokens 4, 5) were made by lane 1's step 2 (tokens 4..6).
  const runs::StepSpan back = span_in_lane(store, {0, 4, 5}, 1);
  EXPECT_EQ(back.first, 2);
  EXPECT_EQ(back.last, 2);
  // Nothing selected: an empty span.
  const runs::StepSpan none = span_in_lane(store, {}, 0);
  EXPECT_GT(none.first, none.last);
}
