#pragma once
// How run and compare record a session: --session-db PATH (default: the XDG data folder), --no-record,
// --title TEXT. The store is opened before any model loads (a bad --session-db fails fast); the run library
// records through it; a recording failure is reported at the end without losing the run's output or what was
// already committed.
#include <optional>
#include <string>

#include "app/cli/args.h"
#include "runs/job.h"
#include "runs/runner.h"

namespace specscope::cli {

// nullopt with --no-record. Throws InputError when the store cannot be opened.
std::optional<runs::RecordTo> read_recording(Args& args, const std::string& kind);
// After the job: "[session N recorded in PATH]" on stderr, or InputError when recording failed.
void report_recording(const runs::JobResult& result, const std::optional<runs::RecordTo>& record);

}  // namespace specscope::cli
