// `bench`'s step profile (runs/step_profile.h) measures the whole thread team, as the roofline it is set against is
// measured, whatever state the fork/join back-off is in when it starts.
#include <gtest/gtest.h>

#include <cstdint>

#include "engine/cpu/roofline.h"
#include "engine/cpu/thread_pool.h"
#include "engine/model/model.h"
#include "runs/step_profile.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

// A back-off in force when the profile starts (one slow join before it on a busy or virtual machine) used to run
// every profiled forward on the caller alone: 0 forks, and each operation's time a single thread's.
TEST(StepProfile, RunsOnTheWholeTeamWhileTheBackOffIsInForce) {
  if (cpu::team_size() < 2) GTEST_SKIP() << "a team of one thread: nothing to fork";
  const auto model = Model::load(test::fixture("models/llama_bytelevel_f32"));
  cpu::Roofline roof;  // made-up bounds: only the forks are under test
  roof.working_set_bytes = size_t(1) << 20;
  roof.read_bytes_per_second = 1e10;
  roof.peaks = {{"f32 fma (test)", 1e10}};
  const bool was_on = cpu::set_backoff(true);
  cpu::hold_backoff(int64_t(60) * 1'000'000'000);  // a minute: the whole profile inside it
  // 64 tokens: the fixture's MLP and LM head products are large enough to fork.
  const auto profile = runs::profile_steps(*model, roof, {64}, 16, 3);
  ASSERT_EQ(profile.size(), 1u);
  EXPECT_GT(profile[0].forks, 0) << "the profile ran on one thread";
  EXPECT_GT(profile[0].ms, 0);
  // The back-off is on again afterwards (its state cleared, so the held minute is gone too).
  EXPECT_TRUE(cpu::set_backoff(was_on));
}

}  // namespace
}  // namespace specscope
