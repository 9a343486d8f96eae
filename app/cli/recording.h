#pragma once
// How run and compare record a session: the store is opened before the model loads (a bad --session-db fails
// fast), steps are handed to the writer thread as they happen, and a recording failure is reported at the end
// without losing the run's output or what was already committed.
#include <memory>
#include <string>

#include "app/cli/args.h"
#include "sessions/writer.h"

namespace specscope::cli {

class Recorder {
 public:
  // --session-db PATH (default: the XDG data folder), --no-record, --title TEXT. Null with --no-record.
  static std::unique_ptr<Recorder> from_args(Args& args);

  int64_t begin_session(const Model& model, const std::string& kind, const std::string& backend);
  int64_t begin_run(const sessions::RunMeta& meta);
  void step(int64_t run_id, const StepRecord& rec, const std::string& text_piece);
  void finish_run(int64_t run_id, const sessions::RunOutcome& outcome);
  void message(const std::string& role, const std::string& content, int64_t run_id = 0);
  // Flushes; prints "session N recorded in PATH" to stderr, or throws InputError when recording failed.
  void finish();

 private:
  std::unique_ptr<sessions::SessionWriter> writer_;
  std::string title_;
  int64_t session_ = 0;
};

}  // namespace specscope::cli
