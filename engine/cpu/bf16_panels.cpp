#include "engine/cpu/bf16_panels.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <tuple>

#include "engine/util/huge_page_arena.h"

namespace specscope::cpu::detail {

std::shared_ptr<const Bf16Panels> pack_bf16_panels(const uint16_t* W, int m, int k) {
  auto p = std::make_shared<Bf16Panels>();
  p->m = m, p->k = k, p->pairs = (k + 1) / 2, p->panels = (m + kPanelRows - 1) / kPanelRows;
  const size_t count = size_t(p->panels) * size_t(p->pairs) * 32;
  // In huge pages (engine/util/huge_page_arena.h), zeroed: rows past m and the element past an odd k stay zero.
  p->storage = huge_page_alloc(count * sizeof(uint16_t));
  p->data = static_cast<uint16_t*>(p->storage.get());
  std::fill_n(p->data, count, uint16_t(0));
  for (int r = 0; r < m; ++r) {
    uint16_t* lane = p->data + size_t(r / kPanelRows) * size_t(p->pairs) * 32 + size_t(r % kPanelRows) * 2;
    const uint16_t* row = W + size_t(r) * size_t(k);
    for (int j = 0; j < k; ++j) lane[size_t(j / 2) * 32 + size_t(j % 2)] = row[j];
  }
  return p;
}

namespace {

struct Entry {
  std::weak_ptr<const void> owner;  // expired: the memory was freed, the panels describe nothing any more
  std::shared_ptr<const Bf16Panels> panels;
  // Whether these panels were packed from the memory `keep_alive` owns: compared by owner, not only by address, so
  // a freed mapping whose address was reused is not mistaken for the old one.
  bool packed_from(const std::shared_ptr<const void>& keep_alive) const {
    return panels && !owner.expired() && !owner.owner_before(keep_alive) && !keep_alive.owner_before(owner);
  }
};
using Key = std::tuple<const void*, int, int>;  // data, m, k

std::shared_mutex g_mutex;
std::map<Key, Entry> g_panels;

}  // namespace

const Bf16Panels* bf16_panels_for(const TensorView& W) {
  if (W.dtype != DType::BF16 || W.shape.size() != 2 || !W.keep_alive || W.data == nullptr) return nullptr;
  const int m = int(W.shape[0]), k = int(W.shape[1]);
  if (m <= 0 || k <= 0) return nullptr;
  const Key key{W.data, m, k};
  {
    std::shared_lock lock(g_mutex);
    const auto it = g_panels.find(key);
    if (it != g_panels.end() && it->second.packed_from(W.keep_alive)) return it->second.panels.get();
  }
  std::unique_lock lock(g_mutex);
  // Drop the panels of freed weights (a model unloaded) before adding more.
  for (auto it = g_panels.begin(); it != g_panels.end();) it = it->second.owner.expired() ? g_panels.erase(it) : ++it;
  auto& e = g_panels[key];
  if (!e.packed_from(W.keep_alive)) {
    e.owner = W.keep_alive;
    e.panels = pack_bf16_panels(static_cast<const uint16_t*>(W.data), m, k);
    spdlog::debug("bf16 panels for '{}' [{}, {}]", W.name, m, k);
  }
  return e.panels.get();
}

}  // namespace specscope::cpu::detail
