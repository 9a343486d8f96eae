#pragma once
// The session database's schema, its versions and how a file is opened: validated before anything is
// written (a file that is not ours, is corrupt, or comes from a newer SpecScope is refused untouched), then
// migrated forward one version per transaction.
#include <memory>
#include <string>

#include "sessions/sqlite_db.h"

namespace specscope::sessions {

inline constexpr int kSchemaVersion = 6;
inline constexpr int32_t kApplicationId = 0x53705363;  // "SpSc" in PRAGMA application_id

// The SQL that creates schema version `version` from nothing, for tests of the migrations (1 to 6).
std::string schema_sql(int version);

enum class OpenFor { Reading, Writing };
// Reading: the file must exist and be a SpecScope store of a version this build reads (an older one is
// migrated first if the file is writable). Writing: the file is created with its folder when missing.
// Throws InputError naming the file and the problem.
std::unique_ptr<Database> open_session_db(const std::string& path, OpenFor purpose);

// $XDG_DATA_HOME/specscope/sessions.db, or ~/.local/share/specscope/sessions.db.
std::string default_session_db_path();

}  // namespace specscope::sessions
