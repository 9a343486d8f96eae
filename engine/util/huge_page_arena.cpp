#include "engine/util/huge_page_arena.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <new>
#include <sstream>
#include <string>

namespace specscope {
namespace {

struct Chunk {
  char* base = nullptr;
  size_t size = 0, used = 0;
  ~Chunk() { std::free(base); }
};

std::mutex g_mutex;
std::weak_ptr<Chunk> g_current;  // the chunk being filled; weak, so that it dies with its last allocation

std::shared_ptr<Chunk> new_chunk(size_t bytes) {
  auto c = std::make_shared<Chunk>();
  c->size = (std::max(bytes, kArenaChunkBytes) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  c->base = static_cast<char*>(std::aligned_alloc(kHugePageBytes, c->size));
  if (!c->base) throw std::bad_alloc();
  // Advice only: where the kernel declines (THP off), the memory is ordinary pages and everything still works.
  madvise(c->base, c->size, MADV_HUGEPAGE);
  return c;
}

}  // namespace

std::shared_ptr<void> huge_page_alloc(size_t bytes) {
  bytes = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  std::lock_guard lock(g_mutex);
  std::shared_ptr<Chunk> c = g_current.lock();
  if (!c || c->size - c->used < bytes) {
    c = new_chunk(bytes);
    g_current = c;
  }
  char* p = c->base + c->used;
  c->used += bytes;
  return std::shared_ptr<void>(c, p);  // aliasing: owns the chunk, points at the allocation
}

HugePageState huge_page_state(const void* p) {
  std::ifstream in("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  HugePageState st;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':'), dash = line.find('-');
    if (dash != std::string::npos && dash < colon) {  // a mapping's header: "lo-hi perms offset dev inode path"
      std::istringstream head(line);
      uintptr_t lo = 0, hi = 0;
      char d = 0;
      inside = (head >> std::hex >> lo >> d >> hi) && d == '-' && addr >= lo && addr < hi;
      continue;
    }
    if (!inside) continue;
    if (line.rfind("AnonHugePages:", 0) == 0) {
      std::istringstream v(line.substr(14));
      size_t kb = 0;
      v >> kb;
      st.huge_bytes = kb * 1024;
    } else if (line.rfind("VmFlags:", 0) == 0) {
      std::istringstream v(line.substr(8));
      for (std::string flag; v >> flag;) st.advised |= flag == "hg";
    }
  }
  return st;
}

}  // namespace specscope
