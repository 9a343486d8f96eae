// Recording faults (issue 18 item 6): the store's disk fills, or its file system turns read-only, during a job or
// between two (a chat's turns). The job goes on to its normal end; recording stops once, said while the job runs in
// one line naming the store and the reason, and the job's end says what the session keeps; every step committed
// before the fault is there and equal to what ran, readable even while the disk is still full or read-only. The CLI
// prints its whole output, then that one line, and exits with 2.
//
// Mechanisms: a real tmpfs of the test's own (tests/private_tmpfs.h: filled to ENOSPC, remounted read-only between
// recordings; root only, else those tests skip) and, for a file system that turns read-only under an open writer
// (which Linux refuses to do for real while a file is open for writing), a VFS that fails writes with EROFS as the
// kernel would (tests/sqlite_fault_vfs.h).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <tuple>

#include "engine/methods/step_record_json.h"
#include "runs/runner.h"
#include "sessions/reader.h"
#include "sessions/sqlite_db.h"
#include "sessions/writer.h"
#include "tests/private_tmpfs.h"
#include "tests/session_test_support.h"
#include "tests/sqlite_fault_vfs.h"
#include "tests/test_support.h"

using namespace specscope;
namespace fs = std::filesystem;

namespace {

// Before main and before any thread: mounts made later by this process stay private to it.
[[maybe_unused]] const bool kNamespaceEntered = [] {
  test::private_namespace_status() = test::enter_private_mount_namespace();
  return true;
}();

const std::string kTarget = test::fixture("models/llama_bytelevel_f32");
constexpr int kTokens = 30;

// Every step and recording message of a job, and when each message came: during the run or after it.
struct FaultObserver : runs::JobObserver {
  std::function<void(int)> at_step;  // called with each step's index, on the run's thread
  std::vector<StepRecord> steps;
  std::vector<std::string> during, after;
  bool finished = false;
  bool step(const runs::RunKey&, const StepRecord& s, const std::string&) override {
    steps.push_back(s);
    if (at_step) at_step(int(steps.size()) - 1);
    return true;
  }
  void run_finished(const runs::RunResult&) override { finished = true; }
  void recording_failed(const std::string& m) override { (finished ? after : during).push_back(m); }
};

runs::Job chat_turn(const std::string& db, int64_t session, std::shared_ptr<sessions::SessionWriter> writer) {
  runs::Job job;
  job.lanes = {runs::Lane{"vanilla", MethodSpec{"vanilla", "", "", {}}, kTarget}};
  job.prompts = {{"Once upon a time", {}}};
  job.options.max_tokens = kTokens;
  job.options.stop_at_eos = false;  // a run of exactly kTokens steps
  job.references = false;
  job.record = runs::RecordTo{db, "chat", "", session, std::move(writer)};
  return job;
}

// The run's recorded steps, each equal to the step the job reported, as JSON (every field).
void expect_recorded(const std::string& db, int64_t run_id, const std::vector<StepRecord>& live, int64_t want) {
  sessions::SessionReader reader(db);
  ASSERT_EQ(reader.step_count(run_id), want);
  for (int64_t i = 0; i < want; ++i)
    EXPECT_EQ(to_json(reader.step(run_id, i).record), to_json(live.at(size_t(i)))) << "step " << i;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A writer the test can flush from inside the job: the first six steps are committed, then the fault comes, and the
// next flush (at step 10) meets it while the run goes on.
void fault_after_six_steps(FaultObserver& obs, sessions::SessionWriter& writer, const std::function<void()>& fault) {
  obs.at_step = [&writer, fault](int i) {
    if (i == 5) {
      writer.flush();
      fault();
    }
    if (i == 10) writer.flush();
  };
}

void expect_stopped_once_during_the_run(const FaultObserver& obs, const runs::JobResult& result, const std::string& db,
                                        const std::string& why) {
  EXPECT_EQ(obs.steps.size(), size_t(kTokens)) << "the run went on to its end";
  EXPECT_EQ(result.runs.at(0).gen.stop_reason, "max_tokens");
  ASSERT_EQ(obs.during.size(), 1u) << "said once, while the run went on";
  EXPECT_EQ(obs.during[0].rfind("recording stopped: " + db + ": ", 0), 0u) << obs.during[0];
  EXPECT_TRUE(contains(obs.during[0], why)) << obs.during[0];
  ASSERT_EQ(obs.after.size(), 1u) << "and at the end, what the session keeps";
  EXPECT_TRUE(contains(obs.after[0], "keeps 6 of this job's " + std::to_string(kTokens) + " steps")) << obs.after[0];
  EXPECT_EQ(result.recording_error, obs.after[0]);
  EXPECT_EQ(obs.after[0].find('\n'), std::string::npos) << "one line";
}

}  // namespace

TEST(RecordingFaults, TheDiskFillsDuringARun) {
  test::PrivateTmpfs disk(test::fresh_dir("disk-full") / "mnt", 1 << 20);
  if (!disk.ok()) GTEST_SKIP() << "no tmpfs of our own: " << disk.why_not();
  const std::string db = (disk.dir() / "sessions.db").string();
  auto writer = std::make_shared<sessions::SessionWriter>(db);
  FaultObserver obs;
  fault_after_six_steps(obs, *writer, [&] { EXPECT_GT(disk.fill(), 0u); });
  runs::ModelCache cache;
  runs::JobRunner runner(cache);
  const runs::JobResult result = runner.run(chat_turn(db, 0, writer), obs);
  expect_stopped_once_during_the_run(obs, result, db, "full");
  writer.reset();  // closing cannot checkpoint on a full disk: the committed steps stay in the WAL
  // Readable while the disk is still full, and after it is freed.
  expect_recorded(db, result.runs.at(0).run_id, obs.steps, 6);
  disk.free_space();
  expect_recorded(db, result.runs.at(0).run_id, obs.steps, 6);
}

TEST(RecordingFaults, TheFileSystemTurnsReadOnlyDuringARun) {
  test::ReadOnlyFaultVfs::install();
  const std::string db = (test::fresh_dir("read-only-mid-run") / "sessions.db").string();
  auto writer = std::make_shared<sessions::SessionWriter>(db);
  FaultObserver obs;
  fault_after_six_steps(obs, *writer, [&] { test::ReadOnlyFaultVfs::fail_writes_under(db); });
  runs::ModelCache cache;
  runs::JobRunner runner(cache);
  const runs::JobResult result = runner.run(chat_turn(db, 0, writer), obs);
  test::ReadOnlyFaultVfs::fail_writes_under("");
  expect_stopped_once_during_the_run(obs, result, db, "the file system is read-only");
  writer.reset();
  expect_recorded(db, result.runs.at(0).run_id, obs.steps, 6);
}

TEST(RecordingFaults, TheFileSystemTurnsReadOnlyBetweenTwoTurnsOfAChat) {
  test::PrivateTmpfs disk(test::fresh_dir("read-only-between") / "mnt", 4 << 20);
  if (!disk.ok()) GTEST_SKIP() << "no tmpfs of our own: " << disk.why_not();
  const std::string db = (disk.dir() / "sessions.db").string();
  runs::ModelCache cache;
  runs::JobRunner runner(cache);
  FaultObserver first;
  const runs::JobResult one = runner.run(chat_turn(db, 0, nullptr), first);  // the runner's own writer, closed after
  ASSERT_TRUE(one.recording_error.empty()) << one.recording_error;
  ASSERT_GT(one.session_id, 0);

  const std::string why = disk.remount(true);
  ASSERT_TRUE(why.empty()) << why;
  FaultObserver second;
  const runs::JobResult two = runner.run(chat_turn(db, one.session_id, nullptr), second);
  EXPECT_EQ(second.steps.size(), size_t(kTokens)) << "the turn was answered";
  ASSERT_EQ(second.during.size(), 1u);
  EXPECT_EQ(second.during[0], "recording stopped: " + db + ": the file system is read-only");
  EXPECT_EQ(two.recording_error, second.during[0]);

  // The first turn is all there, read from the read-only file system itself.
  sessions::SessionReader reader(db);
  const auto session = reader.session(one.session_id);
  ASSERT_EQ(session.runs.size(), 1u);
  expect_recorded(db, one.runs.at(0).run_id, first.steps, kTokens);
  EXPECT_TRUE(disk.remount(false).empty());
}

TEST(RecordingFaults, OpeningAStoreThatCannotBeWrittenSaysWhyAndIsNotBadInput) {
  test::PrivateTmpfs disk(test::fresh_dir("unwritable-open") / "mnt", 1 << 20);
  if (!disk.ok()) GTEST_SKIP() << "no tmpfs of our own: " << disk.why_not();
  const std::string db = (disk.dir() / "sessions.db").string();
  { sessions::SessionWriter w(db); w.begin_session(test::synthetic_session()); }
  // Full: SQLite cannot make the -shm file it needs.
  disk.fill();
  try {
    sessions::SessionWriter w(db);
    w.begin_session(test::synthetic_session());
    ADD_FAILURE() << "recorded on a full disk";
  } catch (const sessions::StoreUnwritable& e) {
    EXPECT_TRUE(contains(e.what(), db + ": the disk is full")) << e.what();
  }
  EXPECT_EQ(sessions::SessionReader(db).list().size(), 1u) << "still readable";
  disk.free_space();
  // Read-only.
  ASSERT_TRUE(disk.remount(true).empty());
  try {
    sessions::SessionWriter w(db);
    ADD_FAILURE() << "opened a store on a read-only file system for writing";
  } catch (const sessions::StoreUnwritable& e) {
    EXPECT_EQ(std::string(e.what()), db + ": the file system is read-only");
  }
  EXPECT_EQ(sessions::SessionReader(db).list().size(), 1u) << "still readable";
  EXPECT_TRUE(disk.remount(false).empty());
}

// The CLI: the whole output, one line naming the store and the problem after it, exit code 2.
TEST(RecordingFaults, TheCliPrintsItsOutputThenOneLineAndExitsWith2) {
  test::PrivateTmpfs disk(test::fresh_dir("cli-faults") / "mnt", 1 << 20);
  if (!disk.ok()) GTEST_SKIP() << "no tmpfs of our own: " << disk.why_not();
  const fs::path out_dir = test::fresh_dir("cli-faults-out");  // not on the tmpfs: the output must fit somewhere
  const std::string db = (disk.dir() / "sessions.db").string();
  // Text on stdout (the JSON lines carry timings, which differ from run to run); the footer and errors on stderr.
  const std::string run = "run --model " + kTarget + " --prompt 'Once upon a time' --max-tokens 12";
  auto cli = [&](const std::string& args) {
    const std::string out = (out_dir / "out.txt").string(), err = (out_dir / "err.txt").string();
    const int st = std::system((std::string(SPECSCOPE_CLI) + " " + args + " >" + out + " 2>" + err).c_str());
    return std::tuple{WIFEXITED(st) ? WEXITSTATUS(st) : -1, test::read_bytes(out), test::read_bytes(err)};
  };
  const auto [code0, want, err0] = cli(run + " --no-record");
  ASSERT_EQ(code0, 0) << err0;
  auto [code1, out1, err1] = cli(run + " --session-db " + db);  // a first session, recorded
  ASSERT_EQ(code1, 0) << err1;

  // stderr: the run's footer line, then the one line about the store, last.
  auto last_line = [](const std::string& err) {
    const auto start = err.rfind('\n', err.size() - 2);
    return err.substr(start == std::string::npos ? 0 : start + 1);
  };
  auto lines = [](const std::string& err) { return std::count(err.begin(), err.end(), '\n'); };
  disk.fill();
  auto [code2, out2, err2] = cli(run + " --session-db " + db);
  EXPECT_EQ(code2, 2);
  EXPECT_EQ(out2, want) << "the whole output";
  EXPECT_EQ(lines(err2), lines(err0) + 1) << err2;
  EXPECT_EQ(last_line(err2).rfind("error: recording stopped: " + db + ": the disk is full", 0), 0u) << err2;
  disk.free_space();

  ASSERT_TRUE(disk.remount(true).empty());
  auto [code3, out3, err3] = cli(run + " --session-db " + db);
  EXPECT_EQ(code3, 2);
  EXPECT_EQ(out3, want);
  EXPECT_EQ(lines(err3), lines(err0) + 1) << err3;
  EXPECT_EQ(last_line(err3), "error: recording stopped: " + db + ": the file system is read-only\n");
  // Nothing committed was lost: the first session is listed from the read-only store.
  auto [code4, list, err4] = cli("sessions list --json --session-db " + db);
  EXPECT_EQ(code4, 0) << err4;
  EXPECT_EQ(nlohmann::json::parse(list).size(), 1u) << list;
  EXPECT_TRUE(disk.remount(false).empty());
}
