// The run library's threads as the desktop app drives them (ui/engine/engine_worker.cpp): a job runs on a worker
// thread, an interleaved race runs each lane (and each reference) on its own thread in turns, the session writer
// commits on its thread, and the UI thread cancels the job while it runs. scripts/sanitize.sh runs this under
// ThreadSanitizer, where a data race among them fails the test; here it checks that the observer is never
// called twice at once (JobObserver's contract) and that a cancel from another thread stops the race.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "runs/lane_resolver.h"
#include "runs/runner.h"
#include "sessions/reader.h"
#include "tests/session_test_support.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

// Counts calls and fails on overlapping ones; signals the test thread after `signal_after` steps.
struct Observer : runs::JobObserver {
  std::atomic<int> inside{0}, overlaps{0};
  int steps = 0, finished = 0;  // observer calls are serialized: plain ints, which TSan checks
  int signal_after = 0;
  std::mutex mu;
  std::condition_variable cv;
  bool reached = false;
  bool hold_until_cancelled = false, cancelled = false;

  struct Enter {
    explicit Enter(Observer& o) : o(o) {
      if (o.inside.fetch_add(1) != 0) o.overlaps.fetch_add(1);
    }
    ~Enter() { o.inside.fetch_sub(1); }
    Observer& o;
  };
  void run_started(const runs::RunKey&, const std::string&) override { Enter e(*this); }
  bool step(const runs::RunKey&, const StepRecord&, const std::string&) override {
    Enter e(*this);
    if (++steps == signal_after) {
      // Holds the step until the test thread has cancelled: a lane keeps its turn for 20 ms of steps, so without
      // this the count after the cancel would measure how fast the test thread wakes, not the runner.
      std::unique_lock lk(mu);
      reached = true;
      cv.notify_all();
      if (hold_until_cancelled) cv.wait(lk, [&] { return cancelled; });
    }
    return true;
  }
  void run_finished(const runs::RunResult&) override {
    Enter e(*this);
    ++finished;
  }
};

runs::Job race(const std::string& db) {
  runs::LaneDefaults d;
  d.target = test::fixture("models/llama_bytelevel_f32");
  d.draft = test::fixture("models/llama_bytelevel_bf16");
  std::vector<runs::LaneRequest> reqs;
  for (const char* l : {"pld", "sps:gamma=3", "lookahead"}) reqs.push_back(runs::parse_lane(l));
  runs::Job job;
  job.lanes = runs::resolve_lanes(reqs, d);
  job.prompts = {{"Once upon a time", {}}, {"The sea is", {}}};
  job.options.max_tokens = 24;
  job.options.stop_at_eos = false;
  job.schedule = runs::Schedule::Interleaved;
  job.record = runs::RecordTo{db, "compare", "threads", 0, nullptr};
  return job;
}

TEST(JobThreads, AnInterleavedRaceOnAWorkerThreadRunsItsLanesInTurnsAndRecordsThem) {
  const auto dir = test::fresh_dir("job-threads");
  runs::ModelCache cache;
  runs::JobRunner runner(cache);
  Observer obs;
  runs::JobResult result;
  std::thread worker([&] { result = runner.run(race((dir / "s.db").string()), obs); });
  worker.join();
  EXPECT_EQ(obs.overlaps.load(), 0) << "observer calls overlapped";
  EXPECT_FALSE(result.cancelled);
  ASSERT_EQ(result.runs.size(), 8u);  // 2 prompts x (reference + 3 lanes)
  EXPECT_EQ(obs.finished, 8);
  ASSERT_TRUE(result.recording_error.empty()) << result.recording_error;
  sessions::SessionReader reader((dir / "s.db").string());
  const auto s = reader.session(result.session_id);
  ASSERT_EQ(s.runs.size(), 8u);
  for (const auto& r : result.runs) EXPECT_EQ(int(r.gen.tokens.size()), 24) << r.label;
}

TEST(JobThreads, ACancelFromAnotherThreadStopsTheRaceWithinAStep) {
  const auto dir = test::fresh_dir("job-threads-cancel");
  runs::ModelCache cache;
  runs::JobRunner runner(cache);
  Observer obs;
  obs.signal_after = 10;
  obs.hold_until_cancelled = true;
  runs::JobResult result;
  std::thread worker([&] { result = runner.run(race((dir / "s.db").string()), obs); });
  {
    std::unique_lock lk(obs.mu);
    obs.cv.wait(lk, [&] { return obs.reached; });
  }
  runner.cancel();  // the UI thread's Stop button
  {
    std::lock_guard lk(obs.mu);
    obs.cancelled = true;
  }
  obs.cv.notify_all();
  worker.join();
  EXPECT_EQ(obs.overlaps.load(), 0) << "observer calls overlapped";
  EXPECT_TRUE(result.cancelled);
  // The first prompt's four runs stop within a step of the cancel (each may finish the step it was in); the
  // second prompt never starts.
  EXPECT_LT(obs.steps, 10 + 8);
  for (const auto& r : result.runs) EXPECT_EQ(r.key.prompt, 0);
}

}  // namespace
}  // namespace specscope
