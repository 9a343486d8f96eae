// The run library's cache files are written whole or not at all (runs/cache_file.h): readers racing writers of the
// same file, as two SpecScope processes deriving the same tree do, only ever see one complete version.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "runs/cache_file.h"
#include "tests/session_test_support.h"

namespace specscope {
namespace {

namespace fs = std::filesystem;

TEST(CacheFile, ReadersRacingWritersSeeOnlyWholeVersions) {
  const fs::path dir = test::fresh_dir("cache-file");
  const fs::path file = dir / "sub" / "tree.json";  // the folder does not exist yet
  // Each version is 256 KB of one letter: a torn read shows up as a short file or two letters.
  constexpr size_t kSize = 256 * 1024;
  ASSERT_TRUE(runs::write_cache_file(file, std::string(kSize, 'a')));
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, reads{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w)
    threads.emplace_back([&, w] {
      for (int i = 0; !stop.load(); ++i)
        EXPECT_TRUE(runs::write_cache_file(file, std::string(kSize, char('b' + (w * 7 + i) % 20))));
    });
  threads.emplace_back([&] {
    for (int i = 0; i < 300; ++i) {
      std::ifstream in(file, std::ios::binary);
      const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      reads.fetch_add(1);
      if (got.size() != kSize || got.find_first_not_of(got[0]) != std::string::npos) torn.fetch_add(1);
    }
    stop.store(true);
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(reads.load(), 300);
  EXPECT_EQ(torn.load(), 0) << "reads that saw a partly written file";
  // Nothing but the file itself is left in its folder (no temporary files).
  int entries = 0;
  for (const auto& e : fs::directory_iterator(file.parent_path())) {
    entries += 1;
    EXPECT_EQ(e.path(), file);
  }
  EXPECT_EQ(entries, 1);
}

TEST(CacheFile, AnUnwritableFolderIsFalseNotAThrow) {
  const fs::path dir = test::fresh_dir("cache-file-ro");
  const fs::path blocker = dir / "not-a-folder";
  std::ofstream(blocker) << "x";
  EXPECT_FALSE(runs::write_cache_file(blocker / "tree.json", "{}"));
}

// Every test executable runs with the build tree's XDG folders (tests/test_environment.cpp), the cache included:
// through ctest's ENVIRONMENT property only the first of the two arrived, and the tests shared ~/.cache/specscope.
TEST(CacheFile, TestsRunWithTheirOwnXdgFolders) {
  for (const char* var : {"XDG_DATA_HOME", "XDG_CACHE_HOME"}) {
    const char* v = std::getenv(var);
    ASSERT_NE(v, nullptr) << var;
    EXPECT_NE(std::string(v).find("/tests/xdg-"), std::string::npos) << var << "=" << v;
  }
}

// A head retrained in place (same folder, same tensor names and shapes) must not reuse the tree choice calibrated on
// its old weights: the stamp the choice's cache key includes changes with any of the folder's files.
TEST(CacheFile, FilesStampChangesWhenAFileIsRewritten) {
  const fs::path dir = fs::temp_directory_path() / ("ss-stamp-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; };
  write("config.json", "{}");
  write("model.safetensors", "weights v1");
  EXPECT_EQ(runs::files_stamp(""), "");
  EXPECT_EQ(runs::files_stamp((dir / "missing").string()), "");
  const std::string before = runs::files_stamp(dir.string());
  EXPECT_NE(before.find("config.json:2:"), std::string::npos) << before;
  EXPECT_NE(before.find("model.safetensors:10:"), std::string::npos) << before;
  EXPECT_EQ(before.find("sub"), std::string::npos) << "folders are not stamped: " << before;
  EXPECT_EQ(runs::files_stamp(dir.string()), before) << "untouched files stamp the same";
  // Same size, later modification time (as a retrained head of the same shapes).
  fs::last_write_time(dir / "model.safetensors", fs::last_write_time(dir / "model.safetensors") + std::chrono::seconds(5));
  const std::string touched = runs::files_stamp(dir.string());
  EXPECT_NE(touched, before);
  write("model.safetensors", "weights v2, longer");
  EXPECT_NE(runs::files_stamp(dir.string()), touched);
  // A single file (a GGUF) is stamped by itself.
  EXPECT_EQ(runs::files_stamp((dir / "config.json").string()).rfind("config.json:2:", 0), 0u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace specscope
