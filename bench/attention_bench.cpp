// Times cpu::attention, the forward's one attention kernel on CPU, for a draft tree's rows against a KV cache: each
// row sees the whole cache and the tree rows before it (a chain), with the default base's shape unless told otherwise
// (6 query heads over 2 KV heads, head_dim 64). Best of --reps timings of 200 calls each, microseconds per call, one
// line per row count; the best rather than the median, since the inputs stay in cache and what varies between
// timings is the machine, not the work.
// --evict MB reads MB megabytes between calls (untimed), as a forward's weights pass through the caches between one
// layer's attention and the next: each call then finds its keys and values where a decode step finds them. The
// figure is then the median of single calls.
//
//   attention_bench [--rows 1,2,4,8,16] [--context 128] [--heads 6] [--kv-heads 2] [--head-dim 64] [--threads N]
//                   [--reps 30] [--evict MB]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cpu/attention.h"
#include "engine/cpu/thread_pool.h"

namespace {

using specscope::cpu::AttentionArgs;

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "attention_bench: %s\nusage: attention_bench [--rows 1,2,4,8,16] [--context 128] [--heads 6] "
               "[--kv-heads 2] [--head-dim 64] [--threads N] [--reps 30] [--evict MB]\n",
               why);
  std::exit(2);
}

int positive(const char* flag, const char* value) {
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (*end || v < 1 || v > 1 << 20) usage((std::string(flag) + ": expected a positive integer").c_str());
  return int(v);
}

// The median of reps x 200 single calls, each after reading `evict` (untimed). The fork/join back-off off, as in
// `bench`'s step profile: the cold calls' long joins would otherwise make it run them on one thread.
double median_cold_us(const AttentionArgs& a, int reps, const std::vector<float>& evict) {
  const specscope::cpu::BackoffOffScope team_whole;
  std::vector<double> times;
  std::atomic<float> sink{0.f};  // keeps the reads; each thread stores its own sum
  for (int r = 0; r < reps * 200; ++r) {
    // Read on the team, as a forward's matrix products are: every core's caches see the bytes, and the workers are
    // as awake as they are between two layers.
    const int parts = 64;
    const size_t part = evict.size() / parts;
    specscope::cpu::run_team_units(parts, evict.size(), 1, [&](int p0, int p1) {
      float s = 0.f;
      for (size_t i = size_t(p0) * part; i < size_t(p1) * part; i += 16) s += evict[i];
      sink.store(s, std::memory_order_relaxed);
    });
    const auto t0 = std::chrono::steady_clock::now();
    specscope::cpu::attention(a);
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + long(times.size() / 2), times.end());
  return times[times.size() / 2];
}

double best_us(const AttentionArgs& a, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) specscope::cpu::attention(a);
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 200);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> row_counts = {1, 2, 4, 8, 16};
  int context = 128, heads = 6, kv_heads = 2, head_dim = 64, threads = 0, reps = 30, evict_mb = 0;
  for (int i = 1; i < argc; ++i) {
    const char* f = argv[i];
    if (i + 1 >= argc) usage((std::string(f) + ": needs a value").c_str());
    const char* v = argv[++i];
    if (!std::strcmp(f, "--rows")) {
      row_counts.clear();
      std::stringstream ss(v);
      for (std::string item; std::getline(ss, item, ',');) row_counts.push_back(positive(f, item.c_str()));
    } else if (!std::strcmp(f, "--context")) context = positive(f, v);
    else if (!std::strcmp(f, "--heads")) heads = positive(f, v);
    else if (!std::strcmp(f, "--kv-heads")) kv_heads = positive(f, v);
    else if (!std::strcmp(f, "--head-dim")) head_dim = positive(f, v);
    else if (!std::strcmp(f, "--threads")) threads = positive(f, v);
    else if (!std::strcmp(f, "--reps")) reps = positive(f, v);
    else if (!std::strcmp(f, "--evict")) evict_mb = positive(f, v);
    else usage((std::string("unknown option ") + f).c_str());
  }
  if (heads % kv_heads) usage("--heads must be a multiple of --kv-heads");
  if (threads) specscope::cpu::set_num_threads(threads);
  const std::vector<float> evict(size_t(evict_mb) << 18, 1.f);
  if (evict_mb)
    std::printf("attention: %d heads over %d KV heads, head_dim %d, context %d, %d threads; median of %d x 200 calls, "
                "each after reading %d MB\n",
                heads, kv_heads, head_dim, context, specscope::cpu::team_size(), reps, evict_mb);
  else
    std::printf("attention: %d heads over %d KV heads, head_dim %d, context %d, %d threads; best of %d x 200 calls\n",
                heads, kv_heads, head_dim, context, specscope::cpu::team_size(), reps);
  for (int rows : row_counts) {
    const int keys = context + rows;
    const size_t kt_stride = specscope::cpu::kt_stride_for(keys);
    std::vector<float> q(size_t(rows) * heads * head_dim), out(q.size());
    std::vector<float> kt(size_t(kv_heads) * kt_stride * head_dim), v(size_t(keys) * kv_heads * head_dim);
    // Values of the scale of a trained model's (scores of a few units), deterministic.
    for (size_t i = 0; i < q.size(); ++i) q[i] = 0.05f * float(int(i % 13) - 6);
    for (size_t i = 0; i < kt.size(); ++i) kt[i] = 0.04f * float(int(i % 7) - 3);
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.03f * float(int(i % 5) - 2);
    std::vector<uint8_t> visible(size_t(rows) * keys);
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < keys; ++j) visible[size_t(r) * keys + j] = j < context || j - context <= r;
    const AttentionArgs a{.q = q.data(), .q_stride = size_t(heads) * head_dim, .rows = rows, .heads = heads,
                          .kv_heads = kv_heads, .head_dim = head_dim, .kt = kt.data(), .kt_stride = kt_stride,
                          .v = v.data(), .v_stride = size_t(kv_heads) * head_dim, .keys = keys,
                          .visible = visible.data(), .scale = 1.f / 8.f, .out = out.data(),
                          .out_stride = size_t(heads) * head_dim};
    const double us = evict_mb ? median_cold_us(a, reps, evict) : best_us(a, reps);
    const double macs = 2.0 * rows * heads * double(keys) * head_dim;
    std::printf("  rows %3d  %8.2f us  %6.2f us/row  %6.1f GMAC/s\n", rows, us, us / rows, macs / us / 1e3);
  }
  return 0;
}
