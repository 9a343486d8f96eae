#pragma once
// How run and compare record a session: --session-db PATH (default: the XDG data folder), --no-record,
// --title TEXT. The store is opened before any model loads (a bad --session-db fails fast; one on a full disk or a
// read-only file system does not stop the run); the run library records through it; a recording failure is reported
// once, after the run's whole output, without losing what was already committed.
#include <optional>
#include <string>

#include "app/cli/args.h"
#include "runs/job.h"
#include "runs/runner.h"

namespace specscope::cli {

// nullopt with --no-record. Throws InputError when the store is bad input (not ours, corrupt, newer, an impossible
// path); a store that cannot be written now (full disk, read-only file system) leaves `writer` empty and the run goes
// on unrecorded.
std::optional<runs::RecordTo> read_recording(Args& args, const std::string& kind);
// After the job: "[session N recorded in PATH]" on stderr, or InputError when recording failed (its one line:
// "recording stopped: PATH: why; session N keeps X of this job's Y steps").
void report_recording(const runs::JobResult& result, const std::optional<runs::RecordTo>& record);

}  // namespace specscope::cli
