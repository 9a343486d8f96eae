#include "sessions/sqlite_db.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/util/error.h"

namespace specscope::sessions {

namespace {

// `path` as a SQLite URI with the immutable flag ('%', '?' and '#' escaped: they end or change a URI's path).
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (char ch : path) {
    if (ch == '%' || ch == '?' || ch == '#') {
      char esc[4];
      std::snprintf(esc, sizeof esc, "%%%02X", static_cast<unsigned char>(ch));
      uri += esc;
    } else {
      uri += ch;
    }
  }
  return uri + "?immutable=1";
}

// What the operating system said under a disk I/O error, in words a user can act on. A file system remounted
// read-only (after errors) or a full disk under an open store reach SQLite as I/O errors carrying errno, not as
// SQLITE_READONLY.
std::string io_error_text(int err) {
  switch (err) {
    case ENOSPC: return "the disk is full";
    case EDQUOT: return "the disk quota is exceeded";
    case EROFS: return "the file system is read-only";
    case EACCES:
    case EPERM: return "no permission to write the file";
    case 0: return "disk I/O error";
    default: return std::string("disk I/O error: ") + std::strerror(err);
  }
}

// The errno behind a disk I/O error. SQLite (3.40) does not pass it on for a failed write to the WAL
// (sqlite3_system_errno stays 0), so ask the connection's own VFS whether the file can still be written: a file
// system remounted read-only under an open store is the usual cause, and access() tells it from a permission taken
// away. 0 when the file is writable (the cause is elsewhere), or for a read-only connection (its I/O errors are reads).
int io_errno(sqlite3* db, const std::string& path) {
  if (const int err = sqlite3_system_errno(db)) return err;
  if (sqlite3_db_readonly(db, "main") != 0) return 0;
  sqlite3_vfs* vfs = nullptr;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_VFS_POINTER, &vfs) != SQLITE_OK || !vfs) return 0;
  int writable = 1;
  errno = 0;
  if (vfs->xAccess(vfs, path.c_str(), SQLITE_ACCESS_READWRITE, &writable) != SQLITE_OK) return 0;
  const int err = errno;  // left by access(2)
  return writable ? 0 : err ? err : EACCES;
}

}  // namespace

Database::Database(const std::string& path, Mode mode) : path_(path) {
  int flags = SQLITE_OPEN_NOMUTEX;  // one connection per thread; no shared-connection locking needed
  const bool read_only = mode == Mode::ReadOnly || mode == Mode::Immutable;
  flags |= read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (mode == Mode::ReadWriteCreate) flags |= SQLITE_OPEN_CREATE;
  if (mode == Mode::Immutable) flags |= SQLITE_OPEN_URI;
  const std::string name = mode == Mode::Immutable ? immutable_uri(path) : path;
  int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path, "cannot open the session database: " + msg +
                               (read_only ? "" : " (is the folder missing or read-only?)"));
  }
  sqlite3_extended_result_codes(db_, 1);
  // Another process (a second CLI run, the GUI) may hold the write lock for a moment.
  sqlite3_busy_timeout(db_, 5000);
  if (!read_only && sqlite3_db_readonly(db_, "main") == 1) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreUnwritable(path, "the session database is read-only (no write permission)");
  }
}

Database::~Database() {
  if (db_ && sqlite3_close(db_) != SQLITE_OK) spdlog::warn("{}: closing with unfinished statements", path_);
}

void Database::check(int rc, std::string_view what) const {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  std::string msg;
  bool unwritable = false;  // the machine's state, not a bad file (StoreUnwritable)
  switch (rc & 0xff) {
    case SQLITE_FULL:
      msg = "the disk or the database is full";
      unwritable = true;
      break;
    case SQLITE_READONLY:
      msg = "the database or its folder is read-only";
      unwritable = true;
      break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: msg = "the file is corrupt or not a SQLite database"; break;
    case SQLITE_BUSY: msg = "another process keeps the database locked"; break;
    case SQLITE_IOERR: {
      const int err = io_errno(db_, path_);
      msg = io_error_text(err);
      unwritable = err == ENOSPC || err == EDQUOT || err == EROFS || err == EACCES || err == EPERM;
      break;
    }
    default: msg = sqlite3_errmsg(db_);
  }
  msg += " (" + std::string(what) + ", " + sqlite3_errstr(rc) + ")";
  if (unwritable) throw StoreUnwritable(path_, msg);
  throw InputError(path_, msg);
}

void Database::exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (err) sqlite3_free(err);
  check(rc, "executing SQL");
}

Statement Database::prepare(const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  check(sqlite3_prepare_v3(db_, sql.c_str(), int(sql.size()), SQLITE_PREPARE_PERSISTENT, &s, nullptr),
        "preparing a statement");
  return Statement(*this, s);
}

int64_t Database::scalar_int(const std::string& sql) {
  auto st = prepare(sql);
  return st.step() ? st.int_at(0) : 0;
}

Statement& Statement::bind(int i, int64_t v) {
  db_->check(sqlite3_bind_int64(stmt_, i, v), "binding");
  return *this;
}
Statement& Statement::bind(int i, double v) {
  db_->check(std::isnan(v) ? sqlite3_bind_null(stmt_, i) : sqlite3_bind_double(stmt_, i, v), "binding");
  return *this;
}
Statement& Statement::bind(int i, std::string_view text) {
  db_->check(sqlite3_bind_text(stmt_, i, text.data(), int(text.size()), SQLITE_TRANSIENT), "binding");
  return *this;
}
Statement& Statement::bind_static(int i, std::string_view text) {
  db_->check(sqlite3_bind_text(stmt_, i, text.data(), int(text.size()), SQLITE_STATIC), "binding");
  return *this;
}
Statement& Statement::bind_null(int i) {
  db_->check(sqlite3_bind_null(stmt_, i), "binding");
  return *this;
}
Statement& Statement::bind_blob(int i, const void* data, size_t size) {
  db_->check(sqlite3_bind_blob(stmt_, i, data, int(size), SQLITE_TRANSIENT), "binding");
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(stmt_);
  db_->check(rc, "reading or writing rows");
  return false;
}

void Statement::run() {
  step();
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Statement::text_at(int col) const {
  auto p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  return p ? std::string(p, size_t(sqlite3_column_bytes(stmt_, col))) : std::string();
}

Transaction::Transaction(Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace specscope::sessions
