#include "app/cli/recording.h"

#include <cstdio>

#include "engine/util/error.h"
#include "sessions/schema.h"
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
  r.writer = std::make_shared<sessions::SessionWriter>(r.db_path);
  return r;
}

void report_recording(const runs::JobResult& result, const std::optional<runs::RecordTo>& record) {
  if (!record) return;
  if (!result.recording_error.empty()) throw InputError(record->db_path, result.recording_error);
  std::fprintf(stderr, "[session %lld recorded in %s]\n", static_cast<long long>(result.session_id),
               record->db_path.c_str());
}

}  // namespace specscope::cli
