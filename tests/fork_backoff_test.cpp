// The fork/join back-off's decision (engine/cpu/fork_backoff.h) on made-up times: the account of time saved
// against time waited, how long a back-off lasts, when it escalates and when it starts over.
#include "engine/cpu/fork_backoff.h"

#include <gtest/gtest.h>

namespace specscope {
namespace {

using cpu::ForkBackoff;
constexpr ForkBackoff::Nanos kUs = 1'000, kMs = 1'000'000;
constexpr ForkBackoff::Nanos kStart = 10'000 * kMs;

// Joins of a team of two whose member waits for a busy core (3 ms each, the caller's share 20 us) until one
// starts a back-off; returns how many it took (0: none within 10).
int joins_until_backoff(ForkBackoff& b, ForkBackoff::Nanos t) {
  for (int i = 1; i <= 10; ++i)
    if (b.on_join(t + i * kUs, 3 * kMs, 20 * kUs, 2)) return i;
  return 0;
}

TEST(ForkBackoff, AMemberWaitingForABusyCoreStartsTheShortestBackoffAtOnce) {
  ForkBackoff b;
  EXPECT_EQ(joins_until_backoff(b, kStart), 1);
  EXPECT_TRUE(b.in_force(kStart + 2 * kUs));
  EXPECT_TRUE(b.in_force(kStart + kUs + 16 * kMs - 1));
  EXPECT_FALSE(b.in_force(kStart + kUs + 16 * kMs));
  EXPECT_EQ(b.last_length(), 16 * kMs);
}

TEST(ForkBackoff, StrayDelaysBetweenGoodJoinsStartNothing) {
  // The quiet virtual machine: a spinning member is now and then 50-100 us late (the host took its vCPU), twice in
  // a row too, among joins where the team halves a 20 us call. The old rule (two slow joins in a row) backed off
  // here and ran whole prompts on one thread.
  ForkBackoff b;
  ForkBackoff::Nanos t = kStart;
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 20; ++i) ASSERT_FALSE(b.on_join(t += 30 * kUs, 2 * kUs, 20 * kUs, 2));
    ASSERT_FALSE(b.on_join(t += 150 * kUs, 100 * kUs, 8 * kUs, 2)) << "round " << round;
    ASSERT_FALSE(b.on_join(t += 150 * kUs, 90 * kUs, 8 * kUs, 2)) << "round " << round;
  }
  EXPECT_FALSE(b.in_force(t + 1));
}

TEST(ForkBackoff, WakeUpsOfSleepingMembersAreAffordable) {
  // Between forwards the members sleep, and each step's first fork waits for a futex wake-up (64-256 us on a
  // virtual machine); the step's other calls save more than that.
  ForkBackoff b;
  ForkBackoff::Nanos t = kStart;
  for (int step = 0; step < 500; ++step) {
    ASSERT_FALSE(b.on_join(t += 300 * kUs, 250 * kUs, 10 * kUs, 2)) << "step " << step;
    for (int i = 0; i < 30; ++i) ASSERT_FALSE(b.on_join(t += 20 * kUs, 1 * kUs, 10 * kUs, 2));
  }
}

TEST(ForkBackoff, GoodCallsBankOnlyUpToTheCap) {
  // However long the team has run well, a lasting load is found within a few calls: saved time is banked up to
  // kCreditCap.
  ForkBackoff b;
  ForkBackoff::Nanos t = kStart;
  for (int i = 0; i < 100'000; ++i) ASSERT_FALSE(b.on_join(t += 50 * kUs, 0, 40 * kUs, 2));
  EXPECT_EQ(b.credit(), ForkBackoff::kCreditCap);
  EXPECT_EQ(joins_until_backoff(b, t), 1);  // 2 ms banked, one 3 ms wait
}

TEST(ForkBackoff, LargerTeamsSaveMorePerCall) {
  // Four threads save three shares per call: the same waits that sink a team of two leave a team of four ahead.
  ForkBackoff two, four;
  ForkBackoff::Nanos t = kStart;
  bool two_backed_off = false;
  for (int i = 0; i < 100; ++i) {
    t += 100 * kUs;
    two_backed_off |= two.on_join(t, 50 * kUs, 20 * kUs, 2);
    ASSERT_FALSE(four.on_join(t, 50 * kUs, 20 * kUs, 4)) << "call " << i;
  }
  EXPECT_TRUE(two_backed_off);
}

TEST(ForkBackoff, ALastingLoadDoublesTheBackoffUpToTheCap) {
  ForkBackoff b;
  ForkBackoff::Nanos t = kStart;
  const ForkBackoff::Nanos expected[] = {16 * kMs, 32 * kMs, 64 * kMs, 128 * kMs, 256 * kMs, 256 * kMs};
  for (ForkBackoff::Nanos length : expected) {
    ASSERT_EQ(joins_until_backoff(b, t), 1) << "the retry credit must not hide a 3 ms wait";
    EXPECT_EQ(b.last_length(), length);
    t += kUs + length + 100 * kMs;  // threads tried again 100 ms after the back-off ended: slow again
    EXPECT_FALSE(b.in_force(t));
  }
}

TEST(ForkBackoff, AStallLongAfterTheLastStartsOverAtTheShortest) {
  ForkBackoff b;
  ForkBackoff::Nanos t = kStart;
  ASSERT_EQ(joins_until_backoff(b, t), 1);
  t += 100 * kMs;
  ASSERT_EQ(joins_until_backoff(b, t), 1);
  EXPECT_EQ(b.last_length(), 32 * kMs);
  t += 5'000 * kMs;  // seconds of fast joins later
  ASSERT_EQ(joins_until_backoff(b, t), 1);
  EXPECT_EQ(b.last_length(), 16 * kMs);
}

TEST(ForkBackoff, AfterABackoffTheFirstWakeUpIsForgiven) {
  // The members slept through the back-off, so the first fork after it pays a wake-up; that alone must not start
  // the next, longer back-off.
  ForkBackoff b;
  ForkBackoff::Nanos t = kStart;
  ASSERT_EQ(joins_until_backoff(b, t), 1);
  t += 20 * kMs;
  EXPECT_FALSE(b.on_join(t, 250 * kUs, 10 * kUs, 2));
  EXPECT_FALSE(b.in_force(t + 1));
}

TEST(ForkBackoff, ResetForgetsTheBackoff) {
  ForkBackoff b;
  ASSERT_EQ(joins_until_backoff(b, kStart), 1);
  b.reset();
  EXPECT_FALSE(b.in_force(kStart + 2 * kUs));
  EXPECT_EQ(b.credit(), ForkBackoff::kRetryCredit);
  EXPECT_EQ(b.last_length(), 16 * kMs);
}

}  // namespace
}  // namespace specscope
