#pragma once
// Real file-system faults for the recording tests: a small tmpfs of the test's own that can be filled up (ENOSPC)
// or remounted read-only (EROFS), rather than a simulation. Mounting needs root (CAP_SYS_ADMIN); the process first
// moves into a mount namespace of its own (enter_private_mount_namespace, before any thread starts: a namespace
// belongs to the thread that unshares), so its mounts are invisible to the machine and vanish with the process
// even when a test crashes. Where that is not allowed, ok() is false with the reason and the tests skip.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace specscope::test {

// Returns "" on success, else why not. Call once, before threads start (a static initializer or main()).
inline std::string enter_private_mount_namespace() {
  if (::unshare(CLONE_NEWNS) != 0) return std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno);
  // Mounts made here must not propagate back to the machine's namespace.
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return std::string("making / private: ") + std::strerror(errno);
  return "";
}

// The namespace result of this process, set by whoever called enter_private_mount_namespace().
inline std::string& private_namespace_status() {
  static std::string status = "enter_private_mount_namespace() was not called";
  return status;
}

class PrivateTmpfs {
 public:
  PrivateTmpfs(const std::filesystem::path& dir, size_t bytes) : dir_(dir), bytes_(bytes) {
    if (!private_namespace_status().empty()) {
      why_ = private_namespace_status();
      return;
    }
    std::filesystem::create_directories(dir_);
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, options().c_str()) != 0) {
      why_ = std::string("mounting a tmpfs: ") + std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~PrivateTmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  PrivateTmpfs(const PrivateTmpfs&) = delete;

  bool ok() const { return mounted_; }
  const std::string& why_not() const { return why_; }
  const std::filesystem::path& dir() const { return dir_; }

  // Writes a filler file until the disk is full: every later allocation fails with ENOSPC. Returns the bytes written.
  size_t fill() {
    const int fd = ::open((dir_ / ".filler").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0) return 0;
    std::vector<char> block(4096, 0);
    size_t total = 0;
    for (;;) {
      const ssize_t n = ::write(fd, block.data(), block.size());
      if (n <= 0) break;
      total += size_t(n);
    }
    // A short write leaves the rest of a page: take it byte by byte.
    const char zero = 0;
    while (::write(fd, &zero, 1) == 1) ++total;
    ::close(fd);
    return total;
  }
  void free_space() { std::filesystem::remove(dir_ / ".filler"); }

  // Remounts read-only (every write then fails with EROFS) or back. Returns "" or why not: the kernel refuses
  // ("busy") while any file on it is open for writing, so a test does it between recordings.
  std::string remount(bool read_only) {
    const unsigned long flags = MS_REMOUNT | (read_only ? MS_RDONLY : 0UL);
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", flags, options().c_str()) != 0)
      return std::string("remounting ") + (read_only ? "read-only: " : "read-write: ") + std::strerror(errno);
    return "";
  }

 private:
  std::string options() const { return "size=" + std::to_string(bytes_) + ",mode=0755"; }
  std::filesystem::path dir_;
  size_t bytes_;
  bool mounted_ = false;
  std::string why_;
};

}  // namespace specscope::test
