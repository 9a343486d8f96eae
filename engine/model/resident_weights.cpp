#include "engine/model/resident_weights.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "engine/cpu/matmul.h"
#include "engine/cpu/kquant_lanes.h"
#include "engine/cpu/quant_int8.h"
#include "engine/cpu/thread_pool.h"
#include "engine/discovery/memory_estimate.h"
#include "engine/util/huge_page_arena.h"

namespace specscope {

namespace {

std::atomic<WeightMemory>& setting() {
  static std::atomic<WeightMemory> s{[] {
    const char* e = std::getenv("SPECSCOPE_WEIGHTS_MEMORY");
    if (e == nullptr || *e == 0) return WeightMemory::Auto;
    if (auto m = parse_weight_memory(e)) return *m;
    spdlog::warn("SPECSCOPE_WEIGHTS_MEMORY={} is not one of auto, copy, map: using auto", e);
    return WeightMemory::Auto;
  }()};
  return s;
}

// Whether the CPU kernels read W's own bytes on every product (and so gain from them being in huge pages).
bool read_in_place(const TensorView& W) {
  if (W.data == nullptr || W.requantized || W.shape.size() != 2) return false;
  if (W.dtype == DType::BF16 && cpu::bf16_weights_repacked(int(W.cols()))) return false;  // its panels are the copy
  return true;
}

// Every matrix of w once (the LM head is the embedding itself in tied models), in for_each_linear's order.
template <class W, class F>
void for_each_unique(W& w, F&& f) {
  std::set<const void*> seen;
  for_each_linear(w, [&](auto& t) {
    if (read_in_place(t) && seen.insert(t.data).second) f(t);
  });
}

}  // namespace

const char* weight_memory_name(WeightMemory m) {
  switch (m) {
    case WeightMemory::Copy: return "copy";
    case WeightMemory::Map: return "map";
    default: return "auto";
  }
}

std::optional<WeightMemory> parse_weight_memory(std::string_view name) {
  for (auto m : {WeightMemory::Auto, WeightMemory::Copy, WeightMemory::Map})
    if (name == weight_memory_name(m)) return m;
  return std::nullopt;
}

WeightMemory set_weight_memory(WeightMemory m) { return setting().exchange(m); }
WeightMemory weight_memory() { return setting().load(std::memory_order_relaxed); }

uint64_t resident_copy_bytes(const ModelWeights& w) {
  uint64_t bytes = 0;
  for_each_unique(w, [&](const TensorView& t) { bytes += t.nbytes(); });
  return bytes;
}

std::shared_ptr<const ModelWeights> resident_copy(const ModelWeights& w, WeightMemory s,
                                                  std::optional<uint64_t> available, const std::string& what,
                                                  const CopyProgress& progress) {
  if (s == WeightMemory::Map) return nullptr;
  const uint64_t bytes = resident_copy_bytes(w);
  if (bytes == 0) return nullptr;
  constexpr uint64_t kSpare = uint64_t(1) << 30;
  if (s == WeightMemory::Auto && available && bytes + kSpare > *available) {
    spdlog::info("{}: weights read from the file's mapping: a copy ({}) would leave less than 1 GiB of {} available",
                 what, discovery::human_bytes(bytes), discovery::human_bytes(*available));
    return nullptr;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto copy = std::make_shared<ModelWeights>(w);
  // Every matrix gets its place first; then the team copies the bytes, each thread its share of the whole (the
  // time is mostly the kernel and the hypervisor backing fresh huge pages, which two cores do side by side).
  struct Move {
    const char* from;
    char* to;
    size_t bytes;
  };
  std::vector<Move> moves;
  std::map<const void*, std::pair<const void*, std::shared_ptr<const void>>> moved;  // old data -> new data, owner
  // Q4_K, Q5_K and Q6_K matrices: their copy is reordered for the integer dot kernels (kquant_lanes.h) and becomes
  // TensorView::lanes, while `data` stays the mapping for every other reader (an embedding row, the exact path).
  struct LanesCopy {
    DType type;
    std::shared_ptr<void> owner;
    size_t super_blocks;
  };
  const bool make_lanes = cpu::detail::kquant_lanes_enabled();
  std::map<const void*, LanesCopy> lanes;  // old data -> its lanes copy
  for_each_unique(*copy, [&](TensorView& t) {
    std::shared_ptr<void> owner = huge_page_alloc(t.nbytes());
    moves.push_back({static_cast<const char*>(t.data), static_cast<char*>(owner.get()), t.nbytes()});
    if (const size_t sb = cpu::lanes_super_block_bytes(t.dtype); make_lanes && sb > 0)
      lanes[t.data] = {t.dtype, owner, t.nbytes() / sb};
    else moved[t.data] = {owner.get(), owner};
  });
  // In slices of 64 MiB, so that progress moves (a 16 GB model takes seconds); the team splits each slice.
  constexpr uint64_t kSlice = uint64_t(64) << 20;
  spdlog::info("{}: copying {} of weights into huge pages", what, discovery::human_bytes(bytes));
  if (progress) progress(0, bytes);
  for (uint64_t slice = 0; slice < bytes; slice += kSlice) {
    const uint64_t slice_end = std::min(bytes, slice + kSlice);
    cpu::run_team(cpu::team_size(), size_t(-1) / 2, 0, [&](int tid, int nt) {
      const uint64_t from = slice + (slice_end - slice) * uint64_t(tid) / uint64_t(nt);
      const uint64_t to = slice + (slice_end - slice) * uint64_t(tid + 1) / uint64_t(nt);
      uint64_t at = 0;  // where the current move starts in the whole
      for (const Move& m : moves) {
        const uint64_t lo = std::max(from, at), hi = std::min(to, at + m.bytes);
        if (lo < hi) std::memcpy(m.to + (lo - at), m.from + (lo - at), hi - lo);
        at += m.bytes;
        if (at >= to) break;
      }
    });
    if (progress) progress(slice_end, bytes);
  }
  if (!lanes.empty()) {  // the copies reordered, each thread an equal share of all their super-blocks
    size_t total = 0;
    for (const auto& entry : lanes) total += entry.second.super_blocks;
    cpu::run_team(cpu::team_size(), size_t(-1) / 2, 0, [&](int tid, int nt) {
      const size_t from = total * size_t(tid) / size_t(nt), to = total * size_t(tid + 1) / size_t(nt);
      size_t at = 0;
      for (const auto& entry : lanes) {
        const LanesCopy& c = entry.second;
        const size_t lo = std::max(from, at), hi = std::min(to, at + c.super_blocks);
        if (lo < hi) {
          uint8_t* first = static_cast<uint8_t*>(c.owner.get()) + (lo - at) * cpu::lanes_super_block_bytes(c.type);
          cpu::to_lanes_in_place(c.type, first, hi - lo);
        }
        at += c.super_blocks;
      }
    });
  }
  auto repoint = [&](TensorView& t) {
    if (auto it = lanes.find(t.data); it != lanes.end()) t.lanes = it->second.owner;
    if (auto it = moved.find(t.data); it != moved.end()) {
      t.data = it->second.first;
      t.keep_alive = it->second.second;
    }
  };
  for_each_linear(*copy, repoint);
  repoint(copy->embed);  // tied models: the embedding and the LM head stay one copy
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("{}: {} of weights copied into huge pages for the CPU in {:.0f} ms", what,
               discovery::human_bytes(bytes), ms);
  return copy;
}

}  // namespace specscope
