#pragma once
// This machine's roofline, measured: how fast the engine's thread team can read a working set of a given size
// (the weights of one forward) and how many multiply-adds per second each kernel path can issue at best. `bench`
// divides each part of an n-token step by these bounds to say how far from the machine's limit it runs.
#include <cstddef>
#include <string>
#include <vector>

namespace specscope::cpu {

struct PathPeak {
  std::string path;        // "f32 fma (avx512)", "bf16 dot (avx512-bf16)", "int8 dot (avx512-vnni)", ...
  double macs_per_second;  // multiply-adds, all team threads together
};

struct Roofline {
  size_t working_set_bytes = 0;
  double read_bytes_per_second = 0;  // best of several passes over the working set, all team threads
  std::vector<PathPeak> peaks;       // the paths this CPU can run
  const PathPeak* peak(const std::string& path_prefix) const;
};

// Measures in about 0.3 s. working_set_bytes: the bytes a forward reads (its weights), so that a model that
// stays in cache is measured against the cache's bandwidth, and a larger one against memory's.
Roofline measure_roofline(size_t working_set_bytes);

// Bytes per second of summing `floats` floats at `data` on every team thread, each its own contiguous part; the best
// of `passes` passes. The read bound measure_roofline reports; bench/memory_source.cpp reads other memory with it.
double read_bandwidth(const float* data, size_t floats, int passes);

}  // namespace specscope::cpu
