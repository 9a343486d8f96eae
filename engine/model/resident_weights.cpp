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
  if (W.loader_copy_in_huge_pages) return false;  // a second copy would only double the memory
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
  // Q4_K, Q5_K and Q6_K matrices are copied with their codes reordered for the integer dot kernels (kquant_lanes.h,
  // super-block by super-block) and become TensorView::lanes, while `data` stays the mapping for every other reader
  // (an embedding row, the exact path).
  const bool make_lanes = cpu::detail::kquant_lanes_enabled();
  struct Move {
    const char* from;
    char* to;
    size_t bytes;
    DType lanes;  // the type whose lanes layout the copy takes; F32 for a plain copy
  };
  struct Copied {
    const void* data;
    std::shared_ptr<const void> owner;
    bool lanes;
  };
  std::vector<Move> moves;
  std::map<const void*, Copied> moved;  // old data -> the copy
  for_each_unique(*copy, [&](TensorView& t) {
    std::shared_ptr<void> owner = huge_page_alloc(t.nbytes());
    const bool lanes = make_lanes && cpu::tensor_takes_lanes(t.dtype, t.cols());
    moves.push_back({static_cast<const char*>(t.data), static_cast<char*>(owner.get()), t.nbytes(),
                     lanes ? t.dtype : DType::F32});
    moved[t.data] = {owner.get(), owner, lanes};
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
        if (const size_t sb = cpu::lanes_super_block_bytes(m.lanes); lo < hi && sb > 0) {
          // The super-blocks that start in [lo, hi), whole: each starts in exactly one thread's share of one slice.
          const uint64_t first = (lo - at + sb - 1) / sb, last = (hi - at + sb - 1) / sb;
          if (first < last)
            cpu::to_lanes(m.lanes, reinterpret_cast<const uint8_t*>(m.from) + first * sb,
                          reinterpret_cast<uint8_t*>(m.to) + first * sb, last - first);
        } else if (lo < hi) {
          std::memcpy(m.to + (lo - at), m.from + (lo - at), hi - lo);
        }
        at += m.bytes;
        if (at >= to) break;
      }
    });
    if (progress) progress(slice_end, bytes);
  }
  auto repoint = [&](TensorView& t) {
    const auto it = moved.find(t.data);
    if (it == moved.end()) return;
    if (it->second.lanes) {
      t.lanes = it->second.owner;
    } else {
      t.data = it->second.data;
      t.keep_alive = it->second.owner;
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
