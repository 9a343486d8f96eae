// Durability bar: a process recording a session is killed with SIGKILL at random moments; after every kill
// the store passes PRAGMA integrity_check, every step the writer had reported committed is there, and every
// step present is whole (all its nodes, every field as written). The same file takes all the trials, so each
// one also recovers from the previous kill's leftover WAL.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <random>
#include <sstream>

#include "engine/methods/step_record_json.h"
#include "sessions/reader.h"
#include "sessions/sqlite_db.h"
#include "sessions/writer.h"
#include "tests/session_test_support.h"

using namespace specscope;
using namespace specscope::sessions;

namespace {

// The child: records synthetic steps forever, reporting each commit on `fd` as "RUN STEPS\n".
[[noreturn]] void record_until_killed(const std::string& db, int fd, unsigned seed) {
  try {
    WriterOptions o;
    o.max_batch_ms = 10;  // many commits per trial, so kills land before, during and after them
    SessionWriter w(db, o);
    w.set_commit_callback([fd](const CommitReport& r) {
      for (auto [run, steps] : r.runs) {
        char line[64];
        int n = std::snprintf(line, sizeof line, "%lld %lld\n", (long long)run, (long long)steps);
        if (write(fd, line, size_t(n)) != n) _exit(4);
      }
    });
    int64_t s = w.begin_session(test::synthetic_session());
    int64_t run = w.begin_run(s, test::synthetic_run());
    std::mt19937 rng(seed);
    for (int64_t i = 0;; ++i) {
      w.append_step(run, test::synthetic_step(run, i), test::synthetic_piece(run, i));
      if (rng() % 64 == 0) usleep(rng() % 3000);
    }
  } catch (...) {
    _exit(3);
  }
}

}  // namespace

TEST(SessionDurability, SigkillAtRandomMomentsLosesNothingCommitted) {
  auto dir = test::fresh_dir("durability");
  const std::string db = (dir / "s.db").string();
  std::mt19937 rng(20261122);
  constexpr int kTrials = 24;
  int64_t total_checked = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      record_until_killed(db, fds[1], unsigned(trial));
    }
    close(fds[1]);
    usleep(useconds_t(20000 + rng() % 230000));  // 20-250 ms: from before the first commit to many commits
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "trial " << trial << ": the child died early";
    std::string reports;
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) reports.append(buf, size_t(n));
    close(fds[0]);
    std::map<int64_t, int64_t> reported;  // run -> steps reported committed
    std::istringstream in(reports);
    for (long long run, steps; in >> run >> steps;) reported[run] = std::max<int64_t>(reported[run], steps);

    {
      Database d(db, Database::Mode::ReadWrite);  // opening read-write recovers the killed writer's WAL
      auto st = d.prepare("PRAGMA integrity_check");
      ASSERT_TRUE(st.step());
      ASSERT_EQ(st.text_at(0), "ok") << "trial " << trial;
    }
    SessionReader reader(db);
    for (auto [run, steps] : reported) {
      const int64_t present = reader.step_count(run);
      ASSERT_GE(present, steps) << "trial " << trial << ": run " << run << " lost committed steps";
      int64_t i = 0;
      // for_each_step throws if a step's node rows disagree with its node_count (a half-written step).
      reader.for_each_step(run, 0, present, [&](RecordedStep&& got) {
        ASSERT_EQ(to_json(got.record).dump(), to_json(test::synthetic_step(run, i)).dump())
            << "trial " << trial << " step " << i;
        ++i;
      });
      ASSERT_EQ(i, present);
      total_checked += present;
    }
  }
  EXPECT_GT(total_checked, 1000) << "the trials recorded and checked a meaningful number of steps";
  std::printf("checked %lld committed steps over %d kills\n", (long long)total_checked, kTrials);
}
