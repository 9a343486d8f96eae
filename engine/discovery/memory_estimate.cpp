#include "engine/discovery/memory_estimate.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "engine/cpu/attention.h"
#include "engine/cpu/matmul.h"

namespace specscope::discovery {

int default_context(int max_context) { return std::min(max_context > 0 ? max_context : 2048, 4096); }

uint64_t cpu_kv_cache_bytes(const ModelFacts& f, int n_ctx) {
  const uint64_t n = uint64_t(n_ctx > 0 ? n_ctx : default_context(f.max_context));
  const uint64_t kt_stride = cpu::kt_stride_for(int(n));  // the transposed keys' row length, as CpuContext sizes it
  const uint64_t key = uint64_t(f.kv_dim), value = uint64_t(f.kv_value_dim > 0 ? f.kv_value_dim : f.kv_dim);
  return uint64_t(f.num_layers) * ((key + value) * n + key * kt_stride) * sizeof(float);
}

MemoryNeed model_memory(const ModelFacts& f, int n_ctx, bool with_kv) {
  MemoryNeed m;
  m.weights = f.size_bytes + f.copied_bytes;
  // bf16 matrices narrower than 2048 inputs (and, on the AMX tiles, wider ones) get a packed copy for the bf16 panel
  // kernels (cpu::bf16_weights_repacked): counted as all of them (where the down projection, wider, is not copied: a
  // small overcount).
  if (f.dtype == "bf16" && cpu::bf16_weights_repacked(f.hidden_size)) m.weights += f.size_bytes;
  if (with_kv && !f.is_head()) m.kv_cache = cpu_kv_cache_bytes(f, n_ctx);
  return m;
}

std::optional<uint64_t> mem_available_bytes(const std::string& meminfo_path) {
  std::ifstream in(meminfo_path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string key, unit;
    uint64_t value = 0;
    if (s >> key >> value >> unit && key == "MemAvailable:") return value * (unit == "kB" ? 1024 : 1);
  }
  return std::nullopt;
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string memory_shortfall(const MemoryNeed& need, uint64_t available, int n_ctx) {
  if (need.total() <= available) return "";
  std::string s = "needs " + human_bytes(need.total()) + " of memory (weights " + human_bytes(need.weights);
  if (need.kv_cache) s += " + KV cache " + human_bytes(need.kv_cache) + (n_ctx > 0 ? " for " + std::to_string(n_ctx) + " tokens" : "");
  return s + "), " + human_bytes(available) + " available (MemAvailable)";
}

}  // namespace specscope::discovery
