#pragma once
// Where the CPU backend reads a model's weight matrices from: the file's mapping (zero-copy), or a copy of them in
// transparent huge pages (engine/util/huge_page_arena.h), made when the first CPU context of the model is created.
//
// Why a copy: decoding a model bigger than the caches streams every weight from memory once per token, and how fast
// memory streams depends on the pages it sits in. A file mapping is 4 KiB page-cache pages scattered over physical
// memory; the hardware prefetchers stop at every 4 KiB boundary and every page costs a TLB walk (a two-level one in
// a virtual machine). On the 2-core development VM (AMD EPYC, KVM), two threads summing 2 GiB, six alternating
// rounds in one process, when its memory is in its fast state: the GGUF file's mapping 35-40 GB/s, anonymous 4 KiB
// pages 45-50 GB/s, anonymous huge pages 55-61 GB/s; a 1B F16 decode 1.17x faster from the copy (in its slow state,
// 28-34 GB/s from every source, 1.0-1.07x). bench/memory_source.cpp and kernel_ab's memory=map|copy measure it;
// bench/results/weight_memory_2026-11-30/.
//
// What is copied: the matrices the kernels read in place (dense f32/f16/bf16 ones, except bf16 ones that the
// bf16 dot kernel repacks into panels, which are already a copy in huge pages; block-quantized ones). Embedding
// rows are read one per token and stay mapped unless the LM head shares them. The values are the same bits, so
// outputs do not change; only the speed does.
//
// Settings: `map` (never copy), `copy` (always), `auto` (the default: copy when the copy fits in MemAvailable with
// 1 GiB to spare, which on a GPU run is never asked: only CPU contexts make the copy). From SPECSCOPE_WEIGHTS_MEMORY,
// or the CLI's --weights-memory.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/model/weights.h"

namespace specscope {

enum class WeightMemory : uint8_t { Auto, Copy, Map };

const char* weight_memory_name(WeightMemory m);  // "auto", "copy", "map"
std::optional<WeightMemory> parse_weight_memory(std::string_view name);

// The process-wide setting (initially SPECSCOPE_WEIGHTS_MEMORY, else auto); set returns the previous one. Applies to
// models whose first CPU context is created after the call.
WeightMemory set_weight_memory(WeightMemory m);
WeightMemory weight_memory();

// Bytes resident_copy would copy out of w.
uint64_t resident_copy_bytes(const ModelWeights& w);

// Called on the copying thread with the bytes copied so far, from (0, total) to (total, total).
using CopyProgress = std::function<void(uint64_t done, uint64_t total)>;

// A copy of w with those matrices in huge pages, or null where `setting` (for auto: `available`, MemAvailable in
// bytes, nullopt when unknown) says to keep reading the mapping, or when nothing would be copied. `what` names the
// model in the log line.
std::shared_ptr<const ModelWeights> resident_copy(const ModelWeights& w, WeightMemory setting,
                                                  std::optional<uint64_t> available, const std::string& what,
                                                  const CopyProgress& progress = {});

}  // namespace specscope
