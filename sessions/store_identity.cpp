#include "sessions/store_identity.h"

#include <fcntl.h>
#include <sys/stat.h>

namespace specscope::sessions {

std::optional<StoreIdentity> store_identity(const std::string& path) {
  struct statx st {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_INO | STATX_BTIME, &st) != 0) return std::nullopt;
  StoreIdentity id;
  id.device = (uint64_t(st.stx_dev_major) << 32) | st.stx_dev_minor;
  id.inode = st.stx_ino;
  if (st.stx_mask & STATX_BTIME) id.birth_ns = int64_t(st.stx_btime.tv_sec) * 1000000000 + st.stx_btime.tv_nsec;
  return id;
}

StoreChange store_change(const std::optional<StoreIdentity>& before, const std::optional<StoreIdentity>& now) {
  if (before && !now) return StoreChange::Deleted;
  if (!before && now) return StoreChange::Created;
  if (before && now && *before != *now) return StoreChange::Replaced;
  return StoreChange::Same;
}

}  // namespace specscope::sessions
