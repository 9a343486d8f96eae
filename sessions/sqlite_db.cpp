#include "sessions/sqlite_db.h"

#include <spdlog/spdlog.h>

#include "engine/util/error.h"

namespace specscope::sessions {

Database::Database(const std::string& path, Mode mode) : path_(path) {
  int flags = SQLITE_OPEN_NOMUTEX;  // one connection per thread; no shared-connection locking needed
  flags |= mode == Mode::ReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (mode == Mode::ReadWriteCreate) flags |= SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path, "cannot open the session database: " + msg +
                               (mode == Mode::ReadOnly ? "" : " (is the folder missing or read-only?)"));
  }
  sqlite3_extended_result_codes(db_, 1);
  // Another process (a second CLI run, the GUI) may hold the write lock for a moment.
  sqlite3_busy_timeout(db_, 5000);
  if (mode != Mode::ReadOnly && sqlite3_db_readonly(db_, "main") == 1) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path, "the session database is read-only (no write permission)");
  }
}

Database::~Database() {
  if (db_ && sqlite3_close(db_) != SQLITE_OK) spdlog::warn("{}: closing with unfinished statements", path_);
}

void Database::check(int rc, std::string_view what) const {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  std::string msg;
  switch (rc & 0xff) {
    case SQLITE_FULL: msg = "the disk or the database is full"; break;
    case SQLITE_READONLY: msg = "the database or its folder is read-only"; break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: msg = "the file is corrupt or not a SQLite database"; break;
    case SQLITE_BUSY: msg = "another process keeps the database locked"; break;
    default: msg = sqlite3_errmsg(db_);
  }
  throw InputError(path_, msg + " (" + std::string(what) + ", " + sqlite3_errstr(rc) + ")");
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
