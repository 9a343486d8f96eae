#pragma once
// Memory honesty: what a run will hold resident, estimated from headers before anything loads, against what the
// machine has (MemAvailable), so that a model too large is refused with one line instead of the kernel's OOM
// killer ending the process mid-load (or mid-answer, when the KV cache is allocated).
//
// What is counted, per model (see the callers for how a job adds them up):
//  - weights: the weight files' bytes. They are mapped, and on the CPU copied into huge pages at the first context
//    where that fits (engine/model/resident_weights.h: the mapping's page cache is then reclaimable, so the copy
//    takes the mapping's place); either way every forward touches all of them, so a run that is to be faster than
//    the disk needs them resident. Plus the bytes the loader copies out of
//    the mapping (GGUF llama files: the Q and K rows it reorders) and the copy the bf16 panel kernels pack of bf16
//    weights on CPUs with AVX2 or AVX-512 when the hidden size is below 2048 (cpu::bf16_weights_repacked).
//  - the KV cache of a CPU context (cpu_context.cpp): f32 keys and values, [layers][n_ctx][kv_dim] each (values
//    kv_value_dim wide with DeepSeek's latent attention), plus the transposed key copy the attention kernel reads,
//    [layers][kv_dim][n_ctx rounded up to 16].
// Not counted: activations and logits (megabytes), the tokenizer, thread stacks. A GPU backend holds its KV cache
// on the device: the check then counts the weights only.
#include <cstdint>
#include <optional>
#include <string>

#include "engine/discovery/model_probe.h"

namespace specscope::discovery {

struct MemoryNeed {
  uint64_t weights = 0, kv_cache = 0;
  uint64_t total() const { return weights + kv_cache; }
  MemoryNeed& operator+=(const MemoryNeed& o) {
    weights += o.weights;
    kv_cache += o.kv_cache;
    return *this;
  }
};

// The context CpuContext allocates when none is asked for: min(max_position_embeddings, 4096).
int default_context(int max_context);
// The CPU context's KV cache for `n_ctx` tokens (0: the default context).
uint64_t cpu_kv_cache_bytes(const ModelFacts& f, int n_ctx);
// Weights, plus the KV cache for n_ctx tokens when `with_kv` (a target or draft model on the CPU; heads keep
// their own one-layer cache, counted as part of their weights' order of magnitude: not at all).
MemoryNeed model_memory(const ModelFacts& f, int n_ctx, bool with_kv = true);

// MemAvailable from /proc/meminfo, in bytes; nullopt where it cannot be read (not Linux): then nothing is refused.
std::optional<uint64_t> mem_available_bytes(const std::string& meminfo_path = "/proc/meminfo");

// "3.2 GiB", "512 MiB", "900 KiB".
std::string human_bytes(uint64_t bytes);
// The refusal, or "" when `need` fits in `available`: "needs 31.2 GiB (weights 29.1 GiB + KV cache 2.1 GiB for
// 4096 tokens), 22.3 GiB available (MemAvailable)".
std::string memory_shortfall(const MemoryNeed& need, uint64_t available, int n_ctx);

}  // namespace specscope::discovery
