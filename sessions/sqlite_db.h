#pragma once
// A thin RAII layer over the SQLite C API: one connection, prepared statements, and errors that name the
// database file. Every failure is an InputError: a session database is a user's file, and what goes wrong with
// it (corrupt, read-only, disk full, locked) is something to tell them in one line, not a crash.
#include <sqlite3.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/util/error.h"

namespace specscope::sessions {

class Statement;

// A store that is fine but cannot take writes now: its disk is full, its file system read-only, no permission. Unlike
// a file that is not ours or is corrupt (bad input, refused before a run starts), this is the machine's state: the
// CLI runs on unrecorded and says so once at the end, the app says so in its status bar.
class StoreUnwritable : public InputError {
 public:
  using InputError::InputError;
};

class Database {
 public:
  // Immutable: read-only, and SQLite assumes nothing can change the file (no locks, no -shm): for a store on a
  // read-only file system, where a WAL database cannot otherwise be opened.
  enum class Mode { ReadOnly, Immutable, ReadWrite, ReadWriteCreate };
  Database(const std::string& path, Mode mode);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void exec(const std::string& sql);
  Statement prepare(const std::string& sql);
  int64_t scalar_int(const std::string& sql);  // the first column of the first row (0 when no row)
  int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
  int changes() const { return sqlite3_changes(db_); }
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }
  // Throws InputError(path, what + ": " + sqlite's message) for a non-OK result code.
  void check(int rc, std::string_view what) const;

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

class Statement {
 public:
  Statement(const Database& db, sqlite3_stmt* stmt) : db_(&db), stmt_(stmt) {}
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(Statement&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
  Statement(const Statement&) = delete;

  // Binding: 1-based like SQLite. NaN floats bind as NULL (SQLite would do the same), read back as NaN.
  Statement& bind(int i, int64_t v);
  Statement& bind(int i, int v) { return bind(i, int64_t(v)); }
  Statement& bind(int i, double v);
  Statement& bind(int i, std::string_view text);  // copied by SQLite (SQLITE_TRANSIENT)
  Statement& bind(int i, const char* text) { return bind(i, std::string_view(text)); }
  Statement& bind(int i, const std::string& text) { return bind(i, std::string_view(text)); }
  // Not copied: `text` must stay alive until the statement is stepped (the writer's hot path).
  Statement& bind_static(int i, std::string_view text);
  Statement& bind_null(int i);
  Statement& bind_blob(int i, const void* data, size_t size);

  bool step();  // true: a row is ready; false: done. Throws on errors.
  void run();   // step() expecting no rows, then reset()
  void reset();

  int64_t int_at(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real_at(int col) const {
    return sqlite3_column_type(stmt_, col) == SQLITE_NULL ? std::nan("") : sqlite3_column_double(stmt_, col);
  }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string text_at(int col) const;

 private:
  const Database* db_;
  sqlite3_stmt* stmt_;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back on scope exit unless committed.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  void commit();

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace specscope::sessions
