#include "app/cli/recording.h"

#include <cstdio>

#include "engine/util/error.h"
#include "sessions/schema.h"
#include "sessions/sqlite_db.h"
#include "sessions/writer.h"

namespace specscope::cli {

std::optional<runs::RecordTo> read_recording(Args& args, const std::string& kind) {
  const bool off = args.has("--no-record");
  auto path = args.get("--session-db");
  auto title = args.get_or("--title", "");
  if (off) return std::nullopt;
  runs::RecordTo r;
  r.db_path = path ? *path : sessions::default_session_db_path();
  r.kind = kind;
  r.title = title;
  try {
    r.writer = std::make_shared<sessions::SessionWriter>(r.db_path);
  } catch (const sessions::StoreUnwritable&) {
    // A full disk or a read-only file system does not keep the user from the answer: the run goes on, the runner
    // opens the store again and, failing, records nothing; report_recording() says why after the output (exit 2).
    // A store that is not ours, is corrupt or newer is bad input and stops the command here, before any model loads.
  }
  return r;
}

void report_recording(const runs::JobResult& result, const std::optional<runs::RecordTo>& record) {
  if (!record) return;
  // One line, after the whole output: it names the store, why recording stopped and what the session keeps.
  // Exit code 2, like any bad file: the session asked for is not (all) there, though the run itself finished.
  if (!result.recording_error.empty()) throw InputError("", result.recording_error);
  std::fprintf(stderr, "[session %lld recorded in %s]\n", static_cast<long long>(result.session_id),
               record->db_path.c_str());
}

}  // namespace specscope::cli
