// The fork/join back-off's decision (engine/cpu/fork_backoff.h) on made-up times: which joins count as slow,
// how long a back-off lasts, when it escalates and when it starts over.
#include "engine/cpu/fork_backoff.h"

#include <gtest/gtest.h>

namespace specscope {
namespace {

using cpu::ForkBackoff;
constexpr ForkBackoff::Nanos kUs = 1'000, kMs = 1'000'000;

// Two slow joins in a row at time t (each waited 200 us while the caller worked 20 us).
bool two_slow_joins(ForkBackoff& b, ForkBackoff::Nanos t) {
  const bool first = b.on_join(t, 200 * kUs, 20 * kUs, false);
  EXPECT_FALSE(first) << "one slow join alone must not start a back-off";
  return b.on_join(t + kUs, 200 * kUs, 20 * kUs, false);
}

TEST(ForkBackoff, TwoSlowJoinsInARowStartTheShortestBackoff) {
  ForkBackoff b;
  const ForkBackoff::Nanos t = 10'000 * kMs;
  ASSERT_TRUE(two_slow_joins(b, t));
  EXPECT_TRUE(b.in_force(t + 2 * kUs));
  EXPECT_TRUE(b.in_force(t + kUs + 16 * kMs - 1));
  EXPECT_FALSE(b.in_force(t + kUs + 16 * kMs));
  EXPECT_EQ(b.last_length(), 16 * kMs);
}

TEST(ForkBackoff, AFastJoinBetweenSlowOnesStartsNothing) {
  ForkBackoff b;
  const ForkBackoff::Nanos t = 10'000 * kMs;
  EXPECT_FALSE(b.on_join(t, 200 * kUs, 20 * kUs, false));
  EXPECT_FALSE(b.on_join(t + 1, 10 * kUs, 20 * kUs, false));   // under the floor and under the work
  EXPECT_FALSE(b.on_join(t + 2, 200 * kUs, 20 * kUs, false));
  EXPECT_FALSE(b.on_join(t + 3, 300 * kUs, 400 * kUs, false));  // waited less than the caller worked
  EXPECT_FALSE(b.on_join(t + 4, 200 * kUs, 20 * kUs, false));
  EXPECT_FALSE(b.in_force(t + 5));
}

TEST(ForkBackoff, WaitsUnderTheFloorAreNeverSlow) {
  ForkBackoff b;
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(b.on_join(i, ForkBackoff::kSlowFloor, 1, false));
  EXPECT_FALSE(b.in_force(11));
}

TEST(ForkBackoff, WakeUpsShorterThanAMillisecondAreNotSlow) {
  // A quiet machine between forwards: every fork wakes the sleeping worker and waits for it (64-256 us on a
  // virtual machine, longer than the caller's share). These joins start no back-off: they count as fast.
  ForkBackoff b;
  const ForkBackoff::Nanos t = 10'000 * kMs;
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(b.on_join(t + i, 500 * kUs, 5 * kUs, true));
  EXPECT_FALSE(b.in_force(t + 21));
  EXPECT_FALSE(b.on_join(t + 30, 200 * kUs, 20 * kUs, false));
  EXPECT_FALSE(b.on_join(t + 31, 500 * kUs, 5 * kUs, true));
  EXPECT_FALSE(b.on_join(t + 32, 200 * kUs, 20 * kUs, false));
  EXPECT_FALSE(b.in_force(t + 33));
}

TEST(ForkBackoff, AWakeUpThatWaitedMillisecondsCounts) {
  // Under a busy process the woken member waits for the scheduler to hand it a core: that is contention.
  ForkBackoff b;
  const ForkBackoff::Nanos t = 10'000 * kMs;
  EXPECT_FALSE(b.on_join(t, 2 * kMs, 5 * kUs, true));
  EXPECT_TRUE(b.on_join(t + 1, 3 * kMs, 5 * kUs, true));
  EXPECT_TRUE(b.in_force(t + 2));
}

TEST(ForkBackoff, ALastingLoadDoublesTheBackoffUpToTheCap) {
  ForkBackoff b;
  ForkBackoff::Nanos t = 10'000 * kMs;
  const ForkBackoff::Nanos expected[] = {16 * kMs, 32 * kMs, 64 * kMs, 128 * kMs, 256 * kMs, 256 * kMs};
  for (ForkBackoff::Nanos length : expected) {
    ASSERT_TRUE(two_slow_joins(b, t));
    EXPECT_EQ(b.last_length(), length);
    t += kUs + length + 100 * kMs;  // threads tried again 100 ms after the back-off ended: slow again
    EXPECT_FALSE(b.in_force(t));
  }
}

TEST(ForkBackoff, AStallLongAfterTheLastStartsOverAtTheShortest) {
  ForkBackoff b;
  ForkBackoff::Nanos t = 10'000 * kMs;
  ASSERT_TRUE(two_slow_joins(b, t));
  t += 100 * kMs;
  ASSERT_TRUE(two_slow_joins(b, t));
  EXPECT_EQ(b.last_length(), 32 * kMs);
  t += 5'000 * kMs;  // seconds of fast joins later
  ASSERT_TRUE(two_slow_joins(b, t));
  EXPECT_EQ(b.last_length(), 16 * kMs);
}

TEST(ForkBackoff, ResetForgetsTheBackoffAndTheSlowJoins) {
  ForkBackoff b;
  const ForkBackoff::Nanos t = 10'000 * kMs;
  ASSERT_TRUE(two_slow_joins(b, t));
  b.reset();
  EXPECT_FALSE(b.in_force(t + 2 * kUs));
  EXPECT_FALSE(b.on_join(t + 3 * kUs, 200 * kUs, 20 * kUs, false));
  EXPECT_EQ(b.last_length(), 16 * kMs);
}

}  // namespace
}  // namespace specscope
