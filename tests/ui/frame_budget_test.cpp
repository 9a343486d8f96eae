// The live-drawing budget (ui/main/frame_budget.h): frames are spaced so that GUI CPU stays within the budget.
#include <gtest/gtest.h>

#include "ui/main/frame_budget.h"

using specscope::ui::FrameBudget;

TEST(FrameBudget, CheapFramesRunAtTheFullFrameRate) {
  FrameBudget b(0.02, 66.0, 0.5);
  b.start(0, 0);
  double wall = 0, cpu = 0;
  for (int i = 0; i < 50; ++i) {
    const double d = b.next_delay_ms(wall, cpu);
    EXPECT_DOUBLE_EQ(d, 66.0) << "frame " << i;
    wall += d;
    cpu += 0.5;  // half a millisecond per frame: 0.75% of a core at 15 Hz
    b.frame_drawn(wall, cpu);
  }
}

TEST(FrameBudget, ExpensiveFramesAreSpacedToTheBudget) {
  for (double cost : {5.0, 20.0, 60.0}) {
    FrameBudget b(0.02, 66.0, 15.0);
    b.start(0, 0);
    double wall = 0, cpu = 0;
    int frames = 0;
    while (wall < 60000) {
      wall += b.next_delay_ms(wall, cpu);
      cpu += cost;
      b.frame_drawn(wall, cpu);
      ++frames;
      // Never more than one frame's cost over the budget, at any time.
      EXPECT_LE(cpu, 0.02 * wall + cost + 1e-9) << "cost " << cost;
    }
    EXPECT_NEAR(cpu / wall, 0.02, 0.002) << "cost " << cost << ": should use the budget, not less";
    EXPECT_GT(frames, 0);
  }
}

TEST(FrameBudget, TheFirstFrameWaitsForItsShare) {
  FrameBudget b(0.02, 66.0, 15.0);
  b.start(1000, 50);
  EXPECT_NEAR(b.next_delay_ms(1000, 50), 750.0, 1e-9);  // 15 ms at 2% of a core: 750 ms into the run
  // CPU spent on other GUI work (not frames) delays it further.
  EXPECT_NEAR(b.next_delay_ms(1000, 60), 1250.0, 1e-9);
}

TEST(FrameBudget, FramesComeAtTheSlowestPaceWhateverTheyCost) {
  // Frames of 200 ms at 2% of a core would come every 10 s; the slowest pace (1 s) wins, so a live view never
  // looks frozen. Without one (the default), the budget alone decides, as before.
  FrameBudget paced(0.02, 66.0, 200.0, 1000.0), unpaced(0.02, 66.0, 200.0);
  paced.start(0, 0);
  unpaced.start(0, 0);
  double wall = 0, cpu = 0;
  for (int i = 0; i < 20; ++i) {
    const double d = paced.next_delay_ms(wall, cpu);
    EXPECT_LE(d, 1000.0 + 1e-9) << "frame " << i;
    EXPECT_GE(d, 66.0);
    wall += d;
    cpu += 200.0;
    paced.frame_drawn(wall, cpu);
  }
  EXPECT_GT(unpaced.next_delay_ms(0, 0), 9000.0);
  // Cheap frames still come no faster than the fastest pace.
  FrameBudget cheap(0.02, 66.0, 0.1, 1000.0);
  cheap.start(0, 0);
  EXPECT_DOUBLE_EQ(cheap.next_delay_ms(0, 0), 66.0);
}
