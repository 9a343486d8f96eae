#pragma once
// A file system that turns read-only under an open store, for tests. Linux will not remount a file system read-only
// while a file on it is open for writing ("busy"), and root ignores permissions, so a store cannot be made
// read-only under a writer for real (tests/private_tmpfs.h does it between recordings). What a writer then sees is
// well defined, though: the kernel fails write() with EROFS, which SQLite's unix VFS turns into SQLITE_IOERR_WRITE,
// and access(2) on the file then fails with EROFS too. This VFS wraps the default one and, once told, does both for
// the files under a path prefix (writes and truncations fail, xAccess says not writable with errno EROFS);
// everything else goes to the real VFS.
#include <sqlite3.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

namespace specscope::test {

class ReadOnlyFaultVfs {
 public:
  // Registers the VFS as the process's default (every connection opened later goes through it). Idempotent.
  static void install() {
    static std::once_flag once;
    std::call_once(once, [] {
      State& s = state();
      s.real = sqlite3_vfs_find(nullptr);
      s.vfs = *s.real;
      s.vfs.zName = "specscope-read-only-fault";
      s.vfs.szOsFile = int(sizeof(File)) + s.real->szOsFile;
      s.vfs.xOpen = &open;
      s.vfs.xAccess = &access;
      s.methods = make_methods();
      sqlite3_vfs_register(&s.vfs, 1);
    });
  }
  // From now on, files whose name starts with `prefix` cannot be written (EROFS); "" ends it.
  static void fail_writes_under(const std::string& prefix) {
    std::lock_guard lk(state().mu);
    state().prefix = prefix;
  }

 private:
  struct File {
    sqlite3_file base;
    const char* name;  // SQLite keeps it valid until xClose
    sqlite3_file* real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
  };
  struct State {
    sqlite3_vfs* real = nullptr;
    sqlite3_vfs vfs{};
    sqlite3_io_methods methods{};
    std::mutex mu;
    std::string prefix;
  };
  static State& state() {
    static State s;
    return s;
  }
  static bool fails(sqlite3_file* f) { return fails(reinterpret_cast<File*>(f)->name); }
  static bool fails(const char* name) {
    std::lock_guard lk(state().mu);
    const std::string& p = state().prefix;
    return !p.empty() && name && std::strncmp(name, p.c_str(), p.size()) == 0;
  }
  static sqlite3_file* real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real(); }

  static int open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
    File* file = reinterpret_cast<File*>(f);
    file->name = name;
    State& s = state();
    const int rc = s.real->xOpen(s.real, name, file->real(), flags, out_flags);
    // SQLite calls xClose only when pMethods is set: mirror the real file.
    file->base.pMethods = file->real()->pMethods ? &s.methods : nullptr;
    return rc;
  }
  // Asked whether such a file can be written, it says no as access(2) would on a read-only file system.
  static int access(sqlite3_vfs*, const char* name, int flags, int* out) {
    if (flags == SQLITE_ACCESS_READWRITE && fails(name)) {
      errno = EROFS;
      *out = 0;
      return SQLITE_OK;
    }
    return state().real->xAccess(state().real, name, flags, out);
  }

  static sqlite3_io_methods make_methods() {
    sqlite3_io_methods m{};
    m.iVersion = 3;
    m.xClose = [](sqlite3_file* f) { return real(f)->pMethods->xClose(real(f)); };
    m.xRead = [](sqlite3_file* f, void* buf, int n, sqlite3_int64 off) { return real(f)->pMethods->xRead(real(f), buf, n, off); };
    m.xWrite = [](sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
      if (fails(f)) return SQLITE_IOERR_WRITE;
      return real(f)->pMethods->xWrite(real(f), buf, n, off);
    };
    m.xTruncate = [](sqlite3_file* f, sqlite3_int64 size) {
      if (fails(f)) return SQLITE_IOERR_TRUNCATE;
      return real(f)->pMethods->xTruncate(real(f), size);
    };
    m.xSync = [](sqlite3_file* f, int flags) { return real(f)->pMethods->xSync(real(f), flags); };
    m.xFileSize = [](sqlite3_file* f, sqlite3_int64* size) { return real(f)->pMethods->xFileSize(real(f), size); };
    m.xLock = [](sqlite3_file* f, int level) { return real(f)->pMethods->xLock(real(f), level); };
    m.xUnlock = [](sqlite3_file* f, int level) { return real(f)->pMethods->xUnlock(real(f), level); };
    m.xCheckReservedLock = [](sqlite3_file* f, int* out) { return real(f)->pMethods->xCheckReservedLock(real(f), out); };
    m.xFileControl = [](sqlite3_file* f, int op, void* arg) { return real(f)->pMethods->xFileControl(real(f), op, arg); };
    m.xSectorSize = [](sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); };
    m.xDeviceCharacteristics = [](sqlite3_file* f) { return real(f)->pMethods->xDeviceCharacteristics(real(f)); };
    m.xShmMap = [](sqlite3_file* f, int region, int size, int extend, void volatile** out) {
      return real(f)->pMethods->xShmMap(real(f), region, size, extend, out);
    };
    m.xShmLock = [](sqlite3_file* f, int offset, int n, int flags) { return real(f)->pMethods->xShmLock(real(f), offset, n, flags); };
    m.xShmBarrier = [](sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); };
    m.xShmUnmap = [](sqlite3_file* f, int del) { return real(f)->pMethods->xShmUnmap(real(f), del); };
    m.xFetch = [](sqlite3_file* f, sqlite3_int64 off, int n, void** out) { return real(f)->pMethods->xFetch(real(f), off, n, out); };
    m.xUnfetch = [](sqlite3_file* f, sqlite3_int64 off, void* p) { return real(f)->pMethods->xUnfetch(real(f), off, p); };
    return m;
  }
};

}  // namespace specscope::test
