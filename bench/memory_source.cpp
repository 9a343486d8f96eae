// How fast the weights stream, by where they sit: the same bytes read from a file's mapping (page-cache pages, as
// the engine reads a GGUF or safetensors file zero-copy), from anonymous 4 KiB pages, and from anonymous
// transparent huge pages (engine/util/huge_page_arena.h, where Model::resident_weights copies them). Each source is
// read three ways, alternated within every round in one process (this VM's memory speed drifts between processes):
//   sum      every team thread sums its contiguous part (cpu::read_bandwidth, as roofline.h's read bound);
//   per matrix  the same sum, one team call per matrix of the linear pass below (the forks and joins a forward has);
//   linear   cpu::linear of one token through 1B-shaped f16 matrices (hidden 2048, GQA 32/8, FFN 8192) cut out of
//            the source one after another: what a decode step's matrix products get.
//
//   memory_source FILE [--rounds 6] [--bytes 2048]   (MiB read per pass, at most the file's size)
// FILE is any large file (a GGUF); its bytes are reinterpreted as f16 matrices whose non-finite values are replaced
// in the anonymous copies only, so the linear pass over the mapping reads the file as it is (speed does not depend
// on the values).
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "engine/cpu/matmul.h"
#include "engine/cpu/roofline.h"
#include "engine/cpu/thread_pool.h"
#include "engine/util/huge_page_arena.h"
#include "engine/util/mapped_file.h"
#include "engine/util/median.h"

using namespace specscope;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// A 1B decoder's matrices in forward order, as [rows, k], repeated until `bytes` are used.
std::vector<TensorView> matrices_in(const char* p, size_t bytes) {
  const int64_t shapes[][2] = {{2048, 2048}, {512, 2048}, {512, 2048}, {2048, 2048},
                               {8192, 2048}, {8192, 2048}, {2048, 8192}};
  std::vector<TensorView> out;
  size_t used = 0;
  for (;;)
    for (const auto& s : shapes) {
      const size_t nb = size_t(s[0] * s[1]) * 2;
      if (used + nb > bytes) return out;
      TensorView t;
      t.dtype = DType::F16;
      t.shape = {s[0], s[1]};
      t.data = p + used;
      out.push_back(t);
      used += nb;
    }
}

double linear_gb_per_s(const std::vector<TensorView>& ms) {
  std::vector<float> x(8192, 0.01f), y(8192);
  size_t bytes = 0;
  const auto t0 = clock_type::now();
  for (const auto& W : ms) {
    cpu::linear(x.data(), 1, W, nullptr, y.data());
    bytes += W.nbytes();
  }
  return double(bytes) / seconds_since(t0) / 1e9;
}

// cpu::read_bandwidth over each matrix in turn, timed as a whole.
double sum_per_matrix_gb_per_s(const std::vector<TensorView>& ms) {
  size_t bytes = 0;
  const auto t0 = clock_type::now();
  for (const auto& W : ms) {
    cpu::read_bandwidth(static_cast<const float*>(W.data), W.nbytes() / sizeof(float), 1);
    bytes += W.nbytes();
  }
  return double(bytes) / seconds_since(t0) / 1e9;
}

// f16 values that are NaN or infinite (exponent all ones) become zero: random file bytes hold some.
void make_finite_f16(char* p, size_t n) {
  auto* h = reinterpret_cast<uint16_t*>(p);
  for (size_t i = 0; i < n / 2; ++i)
    if ((h[i] & 0x7c00u) == 0x7c00u) h[i] = 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: memory_source FILE [--rounds 6] [--bytes MiB]\n");
    return 2;
  }
  int rounds = 6;
  size_t mib = 2048;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--bytes")) mib = size_t(std::max(1, std::atoi(argv[i + 1])));
    else {
      std::fprintf(stderr, "memory_source: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  std::shared_ptr<MappedFile> file;
  try {
    file = MappedFile::open(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memory_source: %s\n", e.what());
    return 2;
  }
  const size_t n = std::min(mib << 20, file->size()) / 4096 * 4096;
  if (n < (size_t(64) << 20)) {
    std::fprintf(stderr, "memory_source: %s: need at least 64 MiB to read (it has %zu bytes)\n", argv[1], file->size());
    return 2;
  }
  const char* mapped = reinterpret_cast<const char*>(file->data());
  // Anonymous 4 KiB pages: mmap'd directly and advised against huge pages (glibc would mmap it anyway).
  void* small = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (small == MAP_FAILED) {
    std::fprintf(stderr, "memory_source: cannot map %zu bytes\n", n);
    return 2;
  }
  madvise(small, n, MADV_NOHUGEPAGE);
  std::shared_ptr<void> huge = huge_page_alloc(n);
  std::memcpy(small, mapped, n);
  std::memcpy(huge.get(), mapped, n);
  make_finite_f16(static_cast<char*>(small), n);
  make_finite_f16(static_cast<char*>(huge.get()), n);
  cpu::read_bandwidth(reinterpret_cast<const float*>(mapped), n / 4, 1);  // the mapping's pages faulted in first

  cpu::set_backoff(false);  // every team thread on every call, as the read bound is measured (roofline.cpp)
  const char* names[] = {"file mapping", "anonymous 4 KiB", "anonymous huge"};
  const char* sources[] = {mapped, static_cast<const char*>(small), static_cast<const char*>(huge.get())};
  std::vector<double> sum[3], per[3], lin[3];
  for (int r = 0; r < rounds; ++r) {
    std::fprintf(stderr, "\r[memory_source] round %d/%d", r + 1, rounds);
    for (int s = 0; s < 3; ++s) {
      sum[s].push_back(cpu::read_bandwidth(reinterpret_cast<const float*>(sources[s]), n / 4, 1) / 1e9);
      per[s].push_back(sum_per_matrix_gb_per_s(matrices_in(sources[s], n)));
      lin[s].push_back(linear_gb_per_s(matrices_in(sources[s], n)));
    }
  }
  std::fprintf(stderr, "\n");
  std::printf("%s: %zu MiB per pass, %d threads, %d rounds alternated; GB/s median (min-max)\n", argv[1], n >> 20,
              cpu::team_size(), rounds);
  auto range = [](const std::vector<double>& v) {
    char text[48];
    std::snprintf(text, sizeof text, "%5.1f (%5.1f-%5.1f)", median(v), *std::min_element(v.begin(), v.end()),
                  *std::max_element(v.begin(), v.end()));
    return std::string(text);
  };
  for (int s = 0; s < 3; ++s)
    std::printf("  %-16s sum %s   per matrix %s   one-token f16 linear %s\n", names[s], range(sum[s]).c_str(),
                range(per[s]).c_str(), range(lin[s]).c_str());
  munmap(small, n);
}
