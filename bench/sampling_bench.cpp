// Times what sampling (T > 0) costs per token on the host: process_logits (temperature, top-k, top-p, min-p over the
// whole vocabulary) and one draw from it, for vocabularies of the shipped family (4,096), Llama 2 / the 1B-shaped
// synthetic (32,000) and Llama 3 (128,256). Beside it, the comparison sort of the same order that process_logits
// used before its order came from top_k_indices' radix pass, so the ratio comes from one run. Logits are seeded
// Gaussian (sd 3) with a few peaks, like a language model's. Best of --reps timings, microseconds per call.
//
//   sampling_bench [--vocab 4096,32000,128256] [--reps 20]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/sampling/sampler.h"

namespace {

using namespace specscope;

template <class F>
double best_us(int reps, int calls, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls);
  }
  return best;
}

std::vector<float> lm_like_logits(int n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> g(0.f, 3.f);
  std::vector<float> l(n);
  for (auto& x : l) x = g(gen);
  for (int i = 0; i < 5; ++i) l[gen() % n] += 12.f - 2.f * i;
  return l;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> vocabs = {4096, 32000, 128256};
  int reps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--vocab")) {
      vocabs.clear();
      std::stringstream s(argv[i + 1]);
      for (std::string t; std::getline(s, t, ',');) vocabs.push_back(std::atoi(t.c_str()));
    } else if (!std::strcmp(argv[i], "--reps")) {
      reps = std::max(1, std::atoi(argv[i + 1]));
    } else {
      std::fprintf(stderr, "sampling_bench: unknown option %s\nusage: sampling_bench [--vocab 4096,...] [--reps 20]\n", argv[i]);
      return 2;
    }
  }
  struct Config { const char* name; SamplingParams p; };
  auto params = [](float t, int k, float top_p, float min_p) {
    SamplingParams p;
    p.temperature = t, p.top_k = k, p.top_p = top_p, p.min_p = min_p;
    return p;
  };
  const Config configs[] = {{"T=0.8", params(0.8f, 0, 1.f, 0.f)},
                            {"T=0.8 top_p=0.95", params(0.8f, 0, 0.95f, 0.f)},
                            {"T=0.8 top_k=40", params(0.8f, 40, 1.f, 0.f)},
                            {"T=0.8 top_k=40 top_p=0.95 min_p=0.05 (llama.cpp's)", params(0.8f, 40, 0.95f, 0.05f)}};
  std::printf("%-8s %-52s %12s %12s %14s\n", "vocab", "sampling", "process us", "+ draw us", "sort-only us");
  for (int V : vocabs) {
    const std::vector<float> l = lm_like_logits(V, 7);
    const int calls = std::max(5, 400000 / V);
    // The former order: a comparison sort of every id through the logits (stable on id for ties).
    std::vector<int32_t> order(V);
    const double sort_us = best_us(reps, calls, [&] {
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
    });
    for (const Config& c : configs) {
      Rng rng(1);
      const double proc = best_us(reps, calls, [&] { (void)process_logits(l.data(), V, c.p); });
      const double with_draw = best_us(reps, calls, [&] { (void)sample_token(l.data(), V, c.p, rng); });
      std::printf("%-8d %-52s %12.1f %12.1f %14.1f\n", V, c.name, proc, with_draw, sort_us);
    }
  }
  return 0;
}
