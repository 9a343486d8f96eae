// The arena the repacked weights live in (engine/util/huge_page_arena.h): aligned, advised as huge pages, shared
// chunks, and memory returned when the last allocation in a chunk goes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "engine/cpu/bf16_panels.h"
#include "engine/util/huge_page_arena.h"

namespace specscope {
namespace {

std::string thp_setting() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(in, s);
  return s;
}

TEST(HugePageArena, AllocationsAreAlignedAdvisedAndShareAChunk) {
  auto a = huge_page_alloc(1000), b = huge_page_alloc(100);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.get()) % 64, 0u);
  // Small allocations are carved one after another from the same chunk.
  EXPECT_EQ(static_cast<char*>(b.get()) - static_cast<char*>(a.get()), 1024);
  std::memset(a.get(), 1, 1000);
  if (thp_setting().empty()) GTEST_SKIP() << "this kernel has no transparent huge pages: the advice cannot apply";
  const HugePageState st = huge_page_state(a.get());
  EXPECT_TRUE(st.advised) << "the chunk's mapping lacks VmFlags hg (MADV_HUGEPAGE)";
  std::printf("THP: %s; AnonHugePages in the chunk's mapping: %zu KiB\n", thp_setting().c_str(), st.huge_bytes / 1024);
}

TEST(HugePageArena, AChunkLivesAsLongAsItsLastAllocation) {
  std::weak_ptr<void> first_chunk;
  {
    const size_t size = kArenaChunkBytes + kHugePageBytes;
    auto big = huge_page_alloc(size);  // a chunk of its own, exactly this big
    first_chunk = big;
    auto next = huge_page_alloc(64);
    // The big request filled its chunk: the next allocation starts another one.
    EXPECT_FALSE(static_cast<char*>(next.get()) >= static_cast<char*>(big.get()) &&
                 static_cast<char*>(next.get()) < static_cast<char*>(big.get()) + size);
    std::weak_ptr<void> w = next;
    next.reset();
    EXPECT_TRUE(w.expired());  // the arena does not keep a chunk alive by itself
    EXPECT_FALSE(first_chunk.expired());
  }
  EXPECT_TRUE(first_chunk.expired());
}

TEST(HugePageArena, Bf16PanelsLiveInIt) {
  std::vector<uint16_t> w(64 * 48, 0x3f80);  // bf16 1.0
  auto panels = cpu::detail::pack_bf16_panels(w.data(), 64, 48);
  if (!thp_setting().empty()) EXPECT_TRUE(huge_page_state(panels->data).advised);
  EXPECT_EQ(panels->data[0], 0x3f80);
}

}  // namespace
}  // namespace specscope
