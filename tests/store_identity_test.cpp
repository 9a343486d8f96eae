// Which file a session store path names (sessions/store_identity.h): unchanged while SQLite records into it, and
// told apart from a file that replaced it (renamed over it, or made anew after a delete), so the library and a chat
// never take another store's session for theirs.
#include <gtest/gtest.h>

#include <filesystem>

#include "sessions/store_identity.h"
#include "sessions/writer.h"
#include "tests/session_test_support.h"

using namespace specscope;
using sessions::StoreChange;

TEST(StoreIdentity, SameWhileRecordedChangedWhenDeletedOrReplaced) {
  const auto dir = test::fresh_dir("store-identity");
  const std::string db = (dir / "sessions.db").string();
  EXPECT_FALSE(sessions::store_identity(db));
  {
    sessions::SessionWriter w(db);
    w.begin_session(test::synthetic_session());
  }
  const auto first = sessions::store_identity(db);
  ASSERT_TRUE(first);
  EXPECT_EQ(sessions::store_change(std::nullopt, first), StoreChange::Created);
  {
    sessions::SessionWriter w(db);  // writes, a WAL, a checkpoint at close: still the same file
    const int64_t s = w.begin_session(test::synthetic_session());
    const int64_t run = w.begin_run(s, test::synthetic_run());
    for (int i = 0; i < 50; ++i) w.append_step(run, test::synthetic_step(run, i), test::synthetic_piece(run, i));
  }
  EXPECT_EQ(sessions::store_change(first, sessions::store_identity(db)), StoreChange::Same);

  // Replaced: another store renamed over it (a restored backup).
  const std::string other = (dir / "other.db").string();
  { sessions::SessionWriter w(other); }
  std::filesystem::rename(other, db);
  const auto second = sessions::store_identity(db);
  EXPECT_EQ(sessions::store_change(first, second), StoreChange::Replaced);

  // Deleted, then made anew (another file takes the freed inode first, as it may on a busy disk).
  std::filesystem::remove(db);
  EXPECT_EQ(sessions::store_change(second, sessions::store_identity(db)), StoreChange::Deleted);
  test::write_bytes(dir / "filler", "x");
  { sessions::SessionWriter w(db); }
  EXPECT_EQ(sessions::store_change(second, sessions::store_identity(db)), StoreChange::Replaced);
}
