// The one-row kernels' software prefetch (matmul_kernels.h, one_row_prefetch_lines) A/B'd inside one process: short
// decodes of a model, alternated setting by setting, so that the host's memory speed, which on this virtual machine
// swings by a third from one minute to the next, reaches every setting alike. Separate processes could not tell
// a 10% difference apart (bench/results/cpu_one_row_prefetch_2026-11-30/).
//
//   prefetch_ab MODEL [--rounds 15] [--tokens 16] [--lines 1,0,4,8]
// --lines: the settings to alternate, prefetch every N-th line (0: never, -1: each kernel's default). Prints each
// setting's median tok/s, every round, and against the first setting round by round.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cpu/matmul_kernels.h"
#include "engine/model/model.h"
#include "engine/sampling/sampler.h"
#include "engine/util/median.h"
#include "runs/step_cost.h"

using namespace specscope;

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: prefetch_ab MODEL [--rounds N] [--tokens N] [--lines 1,0,4,8]\n");
    return 2;
  }
  int rounds = 15, tokens = 16;
  std::vector<int> settings = {1, 0, 4, 8};
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--tokens")) tokens = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--lines")) {
      settings.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string item; std::getline(ss, item, ',');) settings.push_back(std::atoi(item.c_str()));
    } else {
      std::fprintf(stderr, "prefetch_ab: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (settings.empty()) {
    std::fprintf(stderr, "prefetch_ab: --lines needs at least one setting\n");
    return 2;
  }
  auto model = Model::load(argv[1]);
  const int V = model->config().vocab_size;
  auto ctx = model->new_cpu_context(512);
  const std::vector<int32_t> prompt = runs::benchmark_tokens(V, 128);
  ForwardOutput out;
  std::vector<std::vector<double>> tps(settings.size());
  for (int r = 0; r < rounds; ++r) {
    std::fprintf(stderr, "\r[prefetch_ab] round %d/%d", r + 1, rounds);
    for (size_t s = 0; s < settings.size(); ++s) {
      cpu::detail::set_one_row_prefetch_lines(settings[s]);
      ctx->truncate(0);
      Batch b = Batch::causal(prompt);
      b.logit_rows = {int(prompt.size()) - 1};
      ctx->forward(b, out);
      tps[s].push_back(runs::decode_tokens_per_second(*ctx, argmax(out.row_logits(0), V), tokens, V));
    }
  }
  std::fprintf(stderr, "\n");
  cpu::detail::set_one_row_prefetch_lines(-1);
  std::printf("decode tok/s, %d tokens after a 128-token prompt, %d rounds; settings alternated within each round\n",
              tokens, rounds);
  for (size_t s = 0; s < settings.size(); ++s) {
    const auto& v = tps[s];
    // Against the first setting round by round: how often faster, and the geometric mean of the ratios (the
    // host's fast and slow spells come in bursts, so medians over the rounds move with them; ratios within a round
    // do not).
    int beat_first = 0;
    double log_ratio = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      beat_first += v[i] > tps[0][i];
      log_ratio += std::log(v[i] / tps[0][i]);
    }
    std::printf("  every %2d lines: median %6.2f (min %6.2f, max %6.2f); against 'every %d': faster in %d of %d rounds, "
                "%.3fx (geometric mean)\n",
                settings[s], median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()),
                settings[0], beat_first, rounds, std::exp(log_ratio / rounds));
  }
  std::printf("rounds:");
  for (int r = 0; r < rounds; ++r) {
    std::printf("\n ");
    for (size_t s = 0; s < settings.size(); ++s) std::printf(" %6.2f", tps[s][size_t(r)]);
  }
  std::printf("\n");
}
