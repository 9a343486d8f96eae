#pragma once
// Memory for the weights the engine repacks at load (bf16 panels), carved out of 2 MiB-aligned chunks advised as
// transparent huge pages (madvise(MADV_HUGEPAGE), which Debian's default "madvise" setting honours).
//
// Why: a speculative step alternates between two models (target and drafter, or target and head) whose weights
// together are larger than the TLBs reach in 4 KiB pages, and every switch then pays page walks on top of cache
// misses. On the 2-core development VM (AMD EPYC), `bench --beside` in four alternating runs: a 4-token target step
// after three drafter forwards took 0.62-0.76 ms with the panels in huge pages against 0.80-0.92 ms without, and the
// drafter forwards in turns 0.09-0.13 ms against 0.12-0.18 ms (bench/results/huge_pages_2026-11-28.txt).
//
// A chunk is freed when the last allocation in it is: each allocation's owner holds its chunk (shared_ptr aliasing),
// and the arena keeps only a weak reference to the chunk it is filling, so unloading a model returns its memory.
#include <cstddef>
#include <memory>

namespace specscope {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;
inline constexpr size_t kArenaChunkBytes = size_t(32) << 20;

// `bytes` of 64-byte-aligned, uninitialized memory, alive as long as the returned owner (or a copy of it). Chunks
// of kArenaChunkBytes, or bigger for a bigger request. Thread-safe.
std::shared_ptr<void> huge_page_alloc(size_t bytes);

// What /proc/self/smaps says of the mapping that holds p (for tests and diagnostics): whether it is advised as huge
// pages (VmFlags "hg") and how much of it is backed by them (AnonHugePages; none where the kernel has none to give:
// THP "never", or memory too fragmented).
struct HugePageState {
  bool advised = false;
  size_t huge_bytes = 0;
};
HugePageState huge_page_state(const void* p);

}  // namespace specscope
