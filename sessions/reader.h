#pragma once
// Reads a session store without the model: lists sessions, gives a session's runs and messages, a run's
// timeline, and its StepRecords in order or by index (for scrubbing), identical to what was recorded. Opens
// the file read-only (WAL), so it can follow a run that another process is still recording.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sessions/records.h"

namespace specscope::sessions {

class Database;

struct SessionListing {
  int64_t id = 0;
  std::string created_at, kind, title, model_path;
  std::vector<std::string> methods;  // of its runs, in order
  int64_t steps = 0;                 // committed, over all runs
};

class SessionReader {
 public:
  explicit SessionReader(const std::string& db_path);  // throws InputError (missing, corrupt, newer, foreign)
  ~SessionReader();

  std::vector<SessionListing> list();
  // Throws InputError("session N", "no such session") when absent.
  SessionRow session(int64_t id);
  RunRow run(int64_t run_id);
  std::vector<StepBrief> timeline(int64_t run_id);
  int64_t step_count(int64_t run_id);
  RecordedStep step(int64_t run_id, int64_t index);  // InputError when out of range
  // Steps [from, to) in order, streamed without holding them all.
  void for_each_step(int64_t run_id, int64_t from, int64_t to, const std::function<void(RecordedStep&&)>& fn);
  const std::string& path() const { return path_; }

 private:
  struct Statements;
  RunRow read_run(int64_t run_id, bool with_outcome);
  std::string path_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<Statements> stmts_;
};

// Deletes a session with its runs, steps, nodes and messages in one transaction. Returns false when absent.
bool delete_session(const std::string& db_path, int64_t session_id);
// Sets a session's notes (schema version 2). Returns false when absent.
bool set_session_notes(const std::string& db_path, int64_t session_id, const std::string& notes);

}  // namespace specscope::sessions
