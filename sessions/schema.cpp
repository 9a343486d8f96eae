#include "sessions/schema.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/util/error.h"

namespace specscope::sessions {

namespace fs = std::filesystem;

namespace {

// Each entry takes the schema from version i to i+1. A new database runs them all, so there is one path to
// every version and the migrations are exercised on every fresh store. Never edit a shipped entry: add one.
const char* const kMigrations[] = {
    // 0 -> 1: sessions, their chat messages, runs, steps and draft-tree nodes. Enums are stored as their
    // names, not numbers, so a reordered C++ enum can never silently relabel old rows. Arrays of node ids and
    // token ids are short comma-separated text: readable in the sqlite3 shell, compact enough. Steps and nodes
    // are WITHOUT ROWID tables keyed the way they are read (a run's steps in order, a step's nodes in order).
    // Foreign keys are declared in comments only: deletes cascade by hand in one transaction, which keeps
    // the per-node insert free of a parent lookup.
    R"sql(
CREATE TABLE sessions(
  id INTEGER PRIMARY KEY,
  created_at TEXT NOT NULL,
  kind TEXT NOT NULL,
  title TEXT NOT NULL,
  app_version TEXT NOT NULL,
  model_path TEXT NOT NULL,
  model_architecture TEXT NOT NULL,
  model_config_sha256 TEXT NOT NULL,
  model_weights_index_sha256 TEXT NOT NULL,
  backend TEXT NOT NULL,
  device TEXT NOT NULL);
CREATE TABLE messages(                -- session_id -> sessions.id
  session_id INTEGER NOT NULL,
  ordinal INTEGER NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  run_id INTEGER NOT NULL,            -- the run that answered, 0 for none
  PRIMARY KEY(session_id, ordinal)) WITHOUT ROWID;
CREATE TABLE runs(                    -- session_id -> sessions.id
  id INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL,
  ordinal INTEGER NOT NULL,
  method TEXT NOT NULL,
  method_json TEXT NOT NULL,          -- {"name", "draft", "head", "options": {...}}
  temperature REAL NOT NULL, top_k INTEGER NOT NULL, top_p REAL NOT NULL, min_p REAL NOT NULL,
  seed INTEGER NOT NULL,
  max_tokens INTEGER NOT NULL,
  stop_strings_json TEXT NOT NULL,
  prompt TEXT NOT NULL,
  chat INTEGER NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  status TEXT NOT NULL,               -- recording | finished
  started_at TEXT NOT NULL,
  finished_at TEXT,
  output_text TEXT,
  stop_reason TEXT,
  steps INTEGER, new_tokens INTEGER, tau REAL, tokens_per_second REAL, speedup_vs_vanilla REAL,
  identical_to_reference INTEGER,
  summary_json TEXT);
CREATE INDEX runs_by_session ON runs(session_id, ordinal);
CREATE TABLE steps(                   -- run_id -> runs.id
  run_id INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  step INTEGER NOT NULL,
  position INTEGER NOT NULL,
  root_token INTEGER NOT NULL,
  accepted_path TEXT NOT NULL,
  accepted INTEGER NOT NULL,
  node_count INTEGER NOT NULL,
  bonus_token INTEGER NOT NULL,
  bonus_text TEXT NOT NULL,
  bonus_source TEXT NOT NULL,
  bonus_prob REAL,
  committed TEXT NOT NULL,
  text_piece TEXT NOT NULL,
  draft_us INTEGER NOT NULL, verify_forward_us INTEGER NOT NULL, verify_us INTEGER NOT NULL,
  kv_update_us INTEGER NOT NULL,
  target_forwards INTEGER NOT NULL, target_tokens INTEGER NOT NULL,
  draft_forwards INTEGER NOT NULL, draft_tokens INTEGER NOT NULL,
  lossy INTEGER NOT NULL,
  PRIMARY KEY(run_id, idx)) WITHOUT ROWID;
CREATE TABLE nodes(                   -- (run_id, step_idx) -> steps
  run_id INTEGER NOT NULL,
  step_idx INTEGER NOT NULL,
  id INTEGER NOT NULL,
  parent INTEGER NOT NULL,
  depth INTEGER NOT NULL,
  token INTEGER NOT NULL,
  text TEXT NOT NULL,
  draft_prob REAL, cum_score REAL,
  source TEXT NOT NULL,
  source_index INTEGER NOT NULL,
  pruned INTEGER NOT NULL,
  target_prob REAL, accept_prob REAL,
  decision TEXT NOT NULL,
  PRIMARY KEY(run_id, step_idx, id)) WITHOUT ROWID;
)sql",
    // 1 -> 2: free-text notes on a session (a teacher's annotation).
    R"sql(
ALTER TABLE sessions ADD COLUMN notes TEXT NOT NULL DEFAULT '';
)sql",
    // 2 -> 3: races. Each run names its lane, its label and its own target (a race's lanes may verify with
    // different targets, e.g. Speculative Streaming's). NULL in runs recorded before: the reader takes the
    // session's model as their target and their method as their label.
    R"sql(
ALTER TABLE runs ADD COLUMN lane INTEGER;          -- index among the job's lanes; -1: a target's reference run
ALTER TABLE runs ADD COLUMN label TEXT;
ALTER TABLE runs ADD COLUMN target_path TEXT;
ALTER TABLE runs ADD COLUMN target_architecture TEXT;
ALTER TABLE runs ADD COLUMN target_config_sha256 TEXT;
ALTER TABLE runs ADD COLUMN target_weights_index_sha256 TEXT;
)sql",
    // 3 -> 4: why each node was decided (the inspector's "why" panel). Nodes: the uniform draw u and the
    // probability the node was tested against. Steps: `verified`, each verified parent's rule and the target's
    // top-5 there (one entry per parent, not per sibling), and the top-5 of the residual the bonus was drawn
    // from; both compact blobs (sessions/why_blob.h). NULL in rows recorded before: the panel says they lack it.
    R"sql(
ALTER TABLE nodes ADD COLUMN u REAL;
ALTER TABLE nodes ADD COLUMN tested_prob REAL;
ALTER TABLE steps ADD COLUMN verified BLOB;
ALTER TABLE steps ADD COLUMN residual_top_k BLOB;
)sql",
    // 4 -> 5: SpS's confidence cut (sps:confidence-threshold), so that the panel can say why a chain stopped short of
    // gamma. NULL: no cut, or recorded before.
    R"sql(
ALTER TABLE steps ADD COLUMN draft_cut REAL;
)sql",
    // 5 -> 6: on a mixture-of-experts target, the experts the step's forward ran per expert layer (a tree's rows pick
    // more than one token's k). NULL: a dense target, or recorded before.
    R"sql(
ALTER TABLE steps ADD COLUMN experts_per_layer REAL;
)sql",
};
static_assert(std::size(kMigrations) == kSchemaVersion);

// The 100-byte SQLite header, read without SQLite so that nothing can touch a file we do not recognize.
void check_header(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputError(path, "is a directory, not a session database");
  const auto size = fs::file_size(path, ec);
  if (ec || size == 0) return;  // an empty file is an empty database
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot read the session database (permission denied?)");
  unsigned char h[100] = {};
  in.read(reinterpret_cast<char*>(h), sizeof h);
  if (in.gcount() < 100 || std::memcmp(h, "SQLite format 3\0", 16) != 0)
    throw InputError(path, "not a SQLite database (left untouched)");
  uint32_t page_size = uint32_t(h[16]) << 8 | h[17];
  if (page_size == 1) page_size = 65536;
  const uint32_t pages = uint32_t(h[28]) << 24 | uint32_t(h[29]) << 16 | uint32_t(h[30]) << 8 | h[31];
  const uint32_t change = uint32_t(h[24]) << 24 | uint32_t(h[25]) << 16 | uint32_t(h[26]) << 8 | h[27];
  const uint32_t valid_for = uint32_t(h[92]) << 24 | uint32_t(h[93]) << 16 | uint32_t(h[94]) << 8 | h[95];
  // The in-header page count is trustworthy only when its "valid-for" matches the change counter.
  if (change == valid_for && uint64_t(pages) * page_size > size && !fs::exists(path + "-wal"))
    throw InputError(path, "the database file is truncated (" + std::to_string(size) + " bytes, the header says " +
                               std::to_string(uint64_t(pages) * page_size) + "); left untouched");
}

struct Identity {
  int64_t application_id = 0, user_version = 0, objects = 0;
};

Identity read_identity(Database& db) {
  Identity id;
  id.application_id = db.scalar_int("PRAGMA application_id");
  id.user_version = db.scalar_int("PRAGMA user_version");
  id.objects = db.scalar_int("SELECT count(*) FROM sqlite_schema");
  return id;
}

void check_identity(const std::string& path, const Identity& id) {
  if (id.application_id != kApplicationId && !(id.application_id == 0 && id.objects == 0))
    throw InputError(path, "a SQLite database of another application, not a SpecScope session store (left untouched)");
  if (id.user_version < 0)  // found by fuzz_session_db: PRAGMA user_version is a signed 32-bit field
    throw InputError(path, "corrupt session store: schema version " + std::to_string(id.user_version) +
                               " (left untouched)");
  if (id.application_id == kApplicationId && id.user_version == 0)
    throw InputError(path, "corrupt session store: marked as SpecScope's but has no schema version (left untouched)");
  if (id.user_version > kSchemaVersion)
    throw InputError(path, "written by a newer SpecScope (session schema version " + std::to_string(id.user_version) +
                               "; this build reads up to " + std::to_string(kSchemaVersion) +
                               "): upgrade SpecScope to open it");
}

void migrate(Database& db, int64_t from) {
  for (int64_t v = from; v < kSchemaVersion; ++v) {
    Transaction tx(db);
    db.exec(kMigrations[v]);
    if (v == 0) db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
    db.exec("PRAGMA user_version = " + std::to_string(v + 1));
    tx.commit();
    spdlog::debug("{}: session schema migrated to version {}", db.path(), v + 1);
  }
}

// Why an existing store cannot be written, or "" when it can. Said before SQLite tries: it would open a read-only
// file system's store read-only, or fail on its -wal file with "unable to open database file". access() answers
// EROFS even to root, who may otherwise write any file; SQLite also writes in the folder (the -wal and -shm files).
std::string unwritable_reason(const std::string& path) {
  auto reason = [](int err, const std::string& what) {
    return err == EROFS ? std::string("the file system is read-only") : "no permission to write " + what;
  };
  if (::access(path.c_str(), W_OK) != 0) return reason(errno, "the file");
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (::access(dir.c_str(), W_OK) != 0) return reason(errno, "in its folder " + dir);
  return "";
}

// A read-only connection, checked by a first read (SQLite opens lazily). A WAL store whose -shm file SQLite cannot
// create (a read-only file system, a full disk) cannot be opened the usual way; with no -wal content left, every
// committed page is in the file itself, and it is opened as immutable, so what was recorded can still be listed,
// replayed and exported. (Any live writer keeps a -wal file, so it is never read past.)
std::unique_ptr<Database> open_read_only(const std::string& path) {
  try {
    auto db = std::make_unique<Database>(path, Database::Mode::ReadOnly);
    db->scalar_int("PRAGMA user_version");
    return db;
  } catch (const InputError& e) {
    const bool unwritable = dynamic_cast<const StoreUnwritable*>(&e) != nullptr ||
                            (::access(path.c_str(), W_OK) != 0 && errno == EROFS);  // SQLite says "cannot open"
    std::error_code ec;
    const auto wal_bytes = fs::file_size(path + "-wal", ec);
    if (!unwritable || (!ec && wal_bytes > 0)) throw;
  }
  return std::make_unique<Database>(path, Database::Mode::Immutable);
}

}  // namespace

std::string schema_sql(int version) {
  std::string sql;
  for (int v = 0; v < version && v < kSchemaVersion; ++v) sql += kMigrations[v];
  sql += "PRAGMA application_id = " + std::to_string(kApplicationId) + ";\n";
  sql += "PRAGMA user_version = " + std::to_string(version) + ";\n";
  return sql;
}

std::unique_ptr<Database> open_session_db(const std::string& path, OpenFor purpose) {
  const bool exists = fs::exists(path);
  if (!exists && purpose == OpenFor::Reading) throw InputError(path, "no such session database");
  Identity id;
  if (exists && purpose == OpenFor::Writing)
    if (const std::string why = unwritable_reason(path); !why.empty()) throw StoreUnwritable(path, why);
  if (exists) {
    check_header(path);
    // Look before touching: a read-only connection cannot change the file, whatever it holds.
    id = read_identity(*open_read_only(path));
    check_identity(path, id);
  } else {
    std::error_code ec;
    auto parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec) throw InputError(parent.string(), "cannot create the session folder: " + ec.message());
  }
  if (purpose == OpenFor::Reading && id.user_version == kSchemaVersion && id.objects > 0) {
    auto db = open_read_only(path);
    db->exec("PRAGMA query_only = 1");
    return db;
  }
  // Writing, or reading a store that must be created or migrated first.
  auto db = std::make_unique<Database>(path, Database::Mode::ReadWriteCreate);
  db->exec("PRAGMA journal_mode = WAL");   // readers replay while the writer records
  db->exec("PRAGMA synchronous = NORMAL");  // a commit survives a crash of the process; fsync at checkpoints
  id = read_identity(*db);  // again, under this connection (another process may have created it meanwhile)
  check_identity(path, id);
  migrate(*db, id.user_version);
  return db;
}

std::string default_session_db_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  fs::path base;
  if (xdg && *xdg) base = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home) base = fs::path(home) / ".local" / "share";
  else base = ".";
  return (base / "specscope" / "sessions.db").string();
}

}  // namespace specscope::sessions
