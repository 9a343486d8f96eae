#pragma once
// Which file a session store path names. A store deleted, or replaced by another file at the same path (a restored
// backup, a synced copy), must not be taken for the one a view listed or a chat is recording into: the library
// would show rows that are gone, delete session 3 of another file, or a chat's next answer would join a session
// of another store. A file is its device and inode, plus its birth time (ext4 and tmpfs reuse a deleted file's
// inode number at once).
#include <cstdint>
#include <optional>
#include <string>

namespace specscope::sessions {

struct StoreIdentity {
  uint64_t device = 0, inode = 0;
  int64_t birth_ns = 0;  // 0 where the file system does not keep it
  bool operator==(const StoreIdentity&) const = default;
};

// nullopt: no file at `path`.
std::optional<StoreIdentity> store_identity(const std::string& path);

enum class StoreChange { Same, Created, Deleted, Replaced };
StoreChange store_change(const std::optional<StoreIdentity>& before, const std::optional<StoreIdentity>& now);

}  // namespace specscope::sessions
