#pragma once
// The three ways kernels/attention.cu's launcher computes attention (llama_kernels.h's `attention`, same contract
// and arguments for all), declared here so the launcher can choose between them and the kernel tests can run
// each one directly (tests/cuda/cuda_kernels_test.cpp checks that they agree). Nothing else should call these.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "engine/util/host_device.h"
#include "kernels/llama_kernels.h"

namespace specscope::cuda::attention_paths {

// The launcher takes the split path when a row's context (base + n slots) is longer than this. Up to 1024 slots
// the single-block path keeps every score in 4 KiB of shared memory and one block does at most 1024 dot products
// per (row, head), about what one split would do, so splitting would only add a second launch and scratch. Past
// it, the single-block path's serial work per block and its shared memory grow with the context: beyond 12k slots
// it needs the shared-memory opt-in, and beyond ~25k it cannot launch at all on sm_86/sm_89 (99 KiB per block).
inline constexpr int kSplitAboveSlots = 1024;
// The largest head dimension the split and row-tile paths take (each lane of a warp holds 4 of a row's dims).
inline constexpr int kMaxHeadDim = 128;
// Wider heads, up to this (Gemma 2 2B/9B and Gemma 3 1B-12B have 256), take the single-block path at every context:
// its threads loop over the dims, so it takes any head, and one path for every call keeps a tree row's bits its
// decode's. Its scores must fit one block's shared memory (single_block_max_slots), which bounds the context; and
// past ~1k slots it is slow (one block per (row, head) walks the whole context). The CUDA context refuses wider heads,
// and a context longer than the device holds.
inline constexpr int kMaxWideHeadDim = 256;

// The launcher takes the row-tile path for batches of at least this many rows (when it is on): below it a block
// of 32 (row, head) queries would be mostly empty, and the split path's one block per row reads little twice.
inline constexpr int kRowTilesFromRows = 4;

// kernels/attention.cu: one block per (new row, query head), every slot's score in shared memory (base + n
// floats). Valid while those fit the device's shared memory per block: up to single_block_max_slots() slots.
int single_block_max_slots();
void single_block(const float* q, const float* k_cache, const float* v_cache, const int32_t* slot_pos,
                  const uint8_t* mask, const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window,
                  float soft_cap, float* out, cudaStream_t stream);

// kernels/attention_split.cu: the context cut into at most `splits` contiguous chunks (whole tiles of 64 slots;
// fewer chunks when there are fewer tiles), one block per (new row, group of query heads sharing a KV head, chunk)
// running an online softmax over its chunk tile by tile in fixed shared memory, then a combine kernel that rescales
// the chunks' partial results (FlashDecoding). splits == 1 writes the output directly with no scratch. Valid at any
// context length, for head_dim up to kMaxHeadDim. Its chunks depend on the call's rows and slots, so past
// kSplitAboveSlots a tree row need not get its own decode's bits: the launcher takes it only with the row tiles off
// (or a head_dim they do not take).
// Partials go to `scratch` when given (std::logic_error when it holds fewer floats than the call needs;
// split_scratch_floats(hd) covers every split_count choice), else to memory from the stream-ordered allocator.
void split_context(const float* q, const float* k_cache, const float* v_cache, const int32_t* slot_pos,
                   const uint8_t* mask, const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window,
                   float soft_cap, int splits, float* out, cudaStream_t stream, AttentionScratch scratch = {});

// A row that sees more than kSplitAboveSlots slots ("long": its own decode would have that many) sums its context
// in chunks of this many slots by rank, its k-th visible slot counted as the prefix's slot index or, in the tree,
// the prefix plus the tree slots the row sees before it: the slots its own decode reads after the accepted rows are
// moved together, at the same ranks. So a tree row and its decode cut the same sequence of keys at the same places
// (attention_rows.cu), whatever the batch. A shorter row sums its context in one chunk.
inline constexpr int kLongRowChunkSlots = 256;
// The chunks a row-tile call over `total_slots` slots has: one up to kSplitAboveSlots, else one per
// kLongRowChunkSlots (a shorter row of the call keeps everything in the first; the others' partials are empty).
inline int canonical_chunks(int total_slots) {
  return total_slots <= kSplitAboveSlots ? 1 : (total_slots + kLongRowChunkSlots - 1) / kLongRowChunkSlots;
}

// The row tiles' chunk plan, host and device (attention_rows.cu follows it; a host test walks it for trees and
// their decodes on machines without a GPU):
// a row is long when its own decode would see more than kSplitAboveSlots slots (the prefix and the tree slots the
// row sees, itself included);
SPEC_HD bool is_long_row(int base, int tree_slots_seen) { return base + tree_slots_seen > kSplitAboveSlots; }
// a slot of rank `rank` in a row's visible sequence (a prefix slot's index, or the prefix's length plus the tree
// slots the row sees before it) is in chunk rank / kLongRowChunkSlots of a long row, in chunk 0 of a short one;
SPEC_HD int chunk_of_rank(int rank, bool long_row) { return long_row ? rank / kLongRowChunkSlots : 0; }
// and block z of a call of `chunks` chunks walks the prefix slots [prefix_lo, prefix_hi), then, when tree_too, the
// new rows' slots [base, base + n): in one chunk everything; else the prefix slots of chunk z (every prefix slot in
// chunk 0 while a short row is possible, base < kSplitAboveSlots) and the tree slots when some row can rank one
// into chunk z. Slots a query does not see, or sees in another chunk, it skips.
struct ChunkWalk {
  int prefix_lo = 0, prefix_hi = 0;
  bool tree_too = false;
};
SPEC_HD ChunkWalk chunk_walk(int z, int chunks, int base, int n) {
  ChunkWalk w;
  if (chunks == 1) {
    w.prefix_hi = base + n;  // the whole context as one run of slots, in order
    return w;
  }
  constexpr int C = kLongRowChunkSlots;
  const bool short_possible = base < kSplitAboveSlots;
  w.prefix_lo = z * C;
  w.prefix_hi = z == 0 && short_possible ? base : (base < (z + 1) * C ? base : (z + 1) * C);
  w.tree_too = (z * C < base + n && (z + 1) * C > base) || (z == 0 && short_possible);
  return w;
}

// kernels/attention_rows.cu: one block per (tile of row_tile_rows(nh, nkv) rows, group of query heads sharing a KV
// head, chunk), each tile of 64 key and value rows loaded into shared memory once for all of the block's 32 (row,
// head) queries, canonical_chunks(base + n) chunks combined as split_context's are, 90 KiB of shared memory a block
// at hd 128. A row's bits depend only on the keys and values it sees, in order: not on which rows share its block
// or call, nor on where invisible slots lie between its visible ones. Valid at any context length, for head_dim a
// multiple of 4 up to kMaxHeadDim. Past one chunk, the rows go in as many calls as `scratch` holds partials for
// (std::logic_error when it holds fewer than one row's); without scratch, in one call with memory from the
// stream-ordered allocator.
void row_tiles(const float* q, const float* k_cache, const float* v_cache, const int32_t* slot_pos,
               const uint8_t* mask, const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window,
               float soft_cap, float* out, cudaStream_t stream, AttentionScratch scratch = {});
// Rows a row-tile block serves (attention_rows.cu says why).
int row_tile_rows(int nh, int nkv);

// Query heads one split or row-tile block serves (all those of a KV head up to 8, else the largest divisor up to 8).
int heads_per_block(int nh, int nkv);

// Where the partials of `chunks` chunks of n rows go: the caller's scratch when given (std::logic_error when it
// holds fewer floats than they need: an allocation instead would be captured into the caller's graph, the very
// thing the buffer is there to prevent), else memory from the stream-ordered allocator. With one chunk nothing goes
// through scratch.
struct ChunkPlan {
  int chunks = 1;
  float* part_o = nullptr;   // [n, nh, chunks, hd]
  float* part_ml = nullptr;  // [n, nh, chunks, 2]
  bool own = false;          // allocated here; finish_chunks frees it
};
ChunkPlan plan_chunks(int n, int nh, int hd, int chunks, AttentionScratch scratch, cudaStream_t stream);
// The combine when there is more than one chunk (out: the n rows' [n, nh, hd]), then the allocation's release.
// Every (row, head) folds its chunks in order, each chunk weighted by exp(its maximum - the largest), the first
// term a product: its bits depend only on the chunks that saw a slot, and a row that saw one chunk gets exactly
// that chunk's output over its sum, as a call of one chunk normalises it.
void finish_chunks(const ChunkPlan& plan, int n, int nh, int hd, float* out, cudaStream_t stream);

// Calls f(std::integral_constant<int, GB>{}) for gb in 1..8 (heads_per_block's range): the kernels take their group
// of query heads as a template argument, so that its loops unroll into registers.
template <class F>
void with_head_group(int gb, F&& f) {
  switch (gb) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 5: f(std::integral_constant<int, 5>{}); break;
    case 6: f(std::integral_constant<int, 6>{}); break;
    case 7: f(std::integral_constant<int, 7>{}); break;
    default: f(std::integral_constant<int, 8>{}); break;
  }
}

// Floats of scratch one split_context call of n rows and nh query heads in `chunks` chunks writes its partials to:
// each (row, head, chunk)'s output of hd floats, then its running max and sum.
inline size_t split_partials_floats(int n, int nh, int chunks, int hd) {
  return size_t(n) * size_t(nh) * size_t(chunks) * (size_t(hd) + 2);
}
// Floats of scratch that every split_context call with split_count's chunks fits, at any rows and context length.
size_t split_scratch_floats(int hd);

// The number of chunks the launcher asks split_context for (attention_split.cu says why).
int split_count(int n, int nh, int nkv, int total_slots);

}  // namespace specscope::cuda::attention_paths
