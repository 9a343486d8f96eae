#pragma once
// Records sessions from a decoding loop without slowing it: the caller only moves each StepRecord into a
// queue; one writer thread owns the connection, turns records into rows with prepared statements, and commits
// one transaction per batch: whatever was queued in the last 100 ms (sooner for begin_*/flush, or when 4096
// items wait). A failure (disk
// full, read-only file) rolls back only the batch in flight; everything committed before stays, later steps
// are counted as dropped, and error() says what happened — recording never throws into the decoding loop.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sessions/records.h"

namespace specscope::sessions {

class Database;

struct WriterOptions {
  int max_batch_ms = 100;  // the longest a transaction stays open while steps keep arriving
  int64_t max_pages = 0;   // > 0: cap the database at this many pages (PRAGMA max_page_count); a full store
                           // then fails like a full disk does
};

// After each commit: for every run the batch touched, its id and the total steps now committed for it.
struct CommitReport {
  std::vector<std::pair<int64_t, int64_t>> runs;
};

struct WriterStats {
  int64_t transactions = 0, steps_committed = 0, nodes_committed = 0, steps_dropped = 0;
};

class SessionWriter {
 public:
  // Opens (creating when missing) and validates the store; throws InputError before any thread starts.
  explicit SessionWriter(const std::string& db_path, WriterOptions opts = {});
  ~SessionWriter();  // flushes what is queued, then stops
  SessionWriter(const SessionWriter&) = delete;

  // Synchronous: return once the row is committed. Throw InputError when the store cannot take it.
  int64_t begin_session(const SessionMeta& meta);
  int64_t begin_run(int64_t session_id, const RunMeta& meta);
  // Asynchronous: queued, committed in the next batch.
  void append_message(int64_t session_id, const ChatMessage& message);
  void append_step(int64_t run_id, StepRecord record, std::string text_piece);
  void finish_run(int64_t run_id, const RunOutcome& outcome);
  // Waits until everything queued so far is committed (or has failed).
  void flush();

  void set_commit_callback(std::function<void(const CommitReport&)> cb);  // called on the writer thread
  WriterStats stats() const;
  std::string error() const;  // empty while healthy; else the first failure, naming the file
  // error() is not empty: lock-free, so a decoding loop can ask after every step.
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  const std::string& path() const { return path_; }

 private:
  struct Item;
  struct Statements;
  void loop();
  void push(Item item);
  void write(Item& item, CommitReport& report);
  void fail(const std::string& message);

  std::string path_;
  WriterOptions opts_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<Statements> stmts_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  bool urgent_ = false;  // a synchronous request (begin_*, flush) is queued: commit now
  static constexpr size_t kWakeAtQueued = 4096;
  std::function<void(const CommitReport&)> on_commit_;
  WriterStats stats_;
  std::string error_;
  std::atomic<bool> failed_{false};
  std::map<int64_t, int64_t> next_index_;  // run id -> its next step index (writer thread only)
  std::thread thread_;
};

}  // namespace specscope::sessions
