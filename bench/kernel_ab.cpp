// The CPU kernels' tuning settings A/B'd inside one process: the one-row kernels' software prefetch
// (one_row_prefetch_lines), the widening tiles' k block (k_block) and panel rows (panel_rows), all in
// matmul_kernels.h, and where the weights are read from (engine/model/resident_weights.h: the file's mapping or a
// copy in huge pages; each memory setting loads the model once more and keeps its own context). Short decodes, or
// forwards of n new tokens, alternated setting by setting within every round, so that the host's memory speed,
// which on this virtual machine swings by a third from one minute to the next, reaches every setting alike.
// Separate processes could not tell a 10% difference apart (bench/results/cpu_one_row_prefetch_2026-11-30/).
//
//   kernel_ab MODEL [--rounds 15] [--tokens 16 | --step N] [--settings 'default;prefetch=4;kblock=2048,panel=8']
// --settings: ';'-separated settings, each 'default' or a ','-list of prefetch=N (every N-th line, 0: never),
// kblock=N and panel=N (0: the default), exact=1 (the exact path: f32 activations, dequantized weights), qahead=N
// (the integer kernels' 1-2 token prefetch distance in bytes), lanes=0 (Q4_0, Q4_K, Q5_K and Q6_K read in ggml's layouts
// instead of their lanes copies, engine/cpu/kquant_lanes.h; its model is loaded once more, without lanes copies),
// share=0 (the team's static splits instead of units shared out while a fork runs, engine/cpu/unit_shares.h),
// sharemin=N (the smallest fork shared out, in multiply-adds; 0: the default), pahead=N (groups of bf16 panels
// prefetched ahead, 0: none), pl1=0|1 (several tokens' bf16 panel tiles prefetch into L2 or L1; the default follows
// the first-level data cache's size, matmul_kernels.h), dot=0 (bf16 panels widened to f32 as on CPUs without
// AVX512-BF16, instead of vdpbf16ps; cpu::set_bf16_dot), wslices=N (slices a group of one-token tiles of that
// widening kernel reads, 1-4; 0: the instruction set's default), and memory=map|copy.
// --tokens: decode that many tokens after a 128-token prompt (tok/s, higher is better); --step N: instead one forward
// of N new tokens on top of the prompt, all logits (ms, lower is better). Prints each setting's median, every round,
// and each setting against the first round by round.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cpu/matmul.h"
#include "engine/cpu/matmul_kernels.h"
#include "engine/cpu/quant_int8.h"
#include "engine/cpu/thread_pool.h"
#include "engine/model/model.h"
#include "engine/model/resident_weights.h"
#include "engine/sampling/sampler.h"
#include "engine/util/median.h"
#include "runs/step_cost.h"

using namespace specscope;

namespace {

struct Setting {
  std::string label;
  int prefetch_lines = -1, k_block = 0, panel_rows = 0;  // -1 / 0: the kernels' defaults
  int exact = 0;                                          // 1: the exact path (cpu::set_quant_exact)
  long int8_ahead = -1;                                   // the integer kernels' 1-2 token prefetch distance
  long kquant_lanes = -1;                                 // 0: K-quants read in ggml's layouts, no lanes copy
  int unit_sharing = 1;                                   // 0: static splits (cpu::set_unit_sharing)
  long share_min_macs = 0;                                // 0: the default smallest shared fork
  long panel_ahead = -1;                                  // the bf16 panel tiles' prefetch distance in groups
  long panel_l1 = -1;                                     // several tokens' panel tiles into L2 (0) or L1 (1)
  int bf16_dot = 1;                                       // 0: bf16 panels widened, not vdpbf16ps (cpu::set_bf16_dot)
  long widen_slices = -1;                                 // one-token groups of the widening panel kernel
  std::optional<WeightMemory> memory;                     // none: the process's setting
  void apply() const {
    cpu::set_quant_exact(exact != 0);
    cpu::detail::set_one_row_prefetch_lines(prefetch_lines);
    cpu::detail::set_k_block(k_block);
    cpu::detail::set_panel_rows(panel_rows);
    cpu::detail::set_int8_direct_ahead(int8_ahead);
    cpu::detail::set_kquant_lanes(kquant_lanes);
    cpu::set_unit_sharing(unit_sharing != 0);
    cpu::set_unit_sharing_min_macs(size_t(share_min_macs));
    cpu::detail::set_panel_prefetch_groups(panel_ahead);
    cpu::detail::set_panel_prefetch_l1(panel_l1);
    cpu::set_bf16_dot(bf16_dot != 0);
    cpu::detail::set_widen_slices_one_token(widen_slices);
  }
};

std::optional<Setting> parse_setting(const std::string& text) {
  Setting s;
  s.label = text;
  if (text == "default") return s;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string key = item.substr(0, eq);
    if (key == "memory") {
      s.memory = parse_weight_memory(item.substr(eq + 1));
      if (!s.memory || *s.memory == WeightMemory::Auto) return std::nullopt;
      continue;
    }
    char* end = nullptr;
    const long value = std::strtol(item.c_str() + eq + 1, &end, 10);
    if (end == item.c_str() + eq + 1 || *end || value < 0) return std::nullopt;
    if (key == "prefetch") s.prefetch_lines = int(value);
    else if (key == "kblock") s.k_block = int(value);
    else if (key == "panel") s.panel_rows = int(value);
    else if (key == "exact") s.exact = int(value);
    else if (key == "qahead") s.int8_ahead = value;
    else if (key == "lanes") s.kquant_lanes = value;
    else if (key == "share") s.unit_sharing = int(value);
    else if (key == "sharemin") s.share_min_macs = value;
    else if (key == "pahead") s.panel_ahead = value;
    else if (key == "pl1") s.panel_l1 = value;
    else if (key == "dot") s.bf16_dot = int(value);
    else if (key == "wslices") s.widen_slices = value == 0 ? -1 : value;
    else return std::nullopt;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "usage: kernel_ab MODEL [--rounds N] [--tokens N | --step N] [--settings 'default;kblock=2048']\n";
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  int rounds = 15, tokens = 16, step = 0;
  std::vector<Setting> settings;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "kernel_ab: %s needs a value\n%s", argv[i], usage);
      return 2;
    }
    const std::string value = argv[i + 1];
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(value.c_str()));
    else if (!std::strcmp(argv[i], "--tokens")) tokens = std::max(1, std::atoi(value.c_str()));
    else if (!std::strcmp(argv[i], "--step")) step = std::max(1, std::atoi(value.c_str()));
    else if (!std::strcmp(argv[i], "--settings")) {
      std::stringstream ss(value);
      for (std::string item; std::getline(ss, item, ';');) {
        const auto s = parse_setting(item);
        if (!s) {
          std::fprintf(stderr,
                       "kernel_ab: bad setting '%s' (want default, or a ','-list of prefetch=N, kblock=N, panel=N, "
                       "exact=1, qahead=N, lanes=0|1, share=0|1, sharemin=N, pahead=N, pl1=0|1, dot=0, wslices=N, memory=map|copy)\n",
                       item.c_str());
          return 2;
        }
        settings.push_back(*s);
      }
    } else {
      std::fprintf(stderr, "kernel_ab: unknown option %s\n%s", argv[i], usage);
      return 2;
    }
  }
  if (settings.empty()) {
    std::fprintf(stderr, "kernel_ab: --settings needs at least one setting\n");
    return 2;
  }
  // One model and context per weight-memory setting and lanes=0 or not: a model makes its huge-page copy (or not),
  // with K-quant lanes copies (or not), once, at its first context, so a second setting needs a second load.
  std::vector<std::shared_ptr<const Model>> models;
  std::vector<std::unique_ptr<Context>> contexts;
  std::vector<int> context_of(settings.size());
  std::vector<std::pair<std::optional<WeightMemory>, bool>> memory_of;
  for (size_t s = 0; s < settings.size(); ++s) {
    const std::pair<std::optional<WeightMemory>, bool> load{settings[s].memory, settings[s].kquant_lanes == 0};
    const auto it = std::find(memory_of.begin(), memory_of.end(), load);
    context_of[s] = int(it - memory_of.begin());
    if (it != memory_of.end()) continue;
    memory_of.push_back(load);
    const WeightMemory before = weight_memory();
    if (settings[s].memory) set_weight_memory(*settings[s].memory);
    settings[s].apply();  // (lanes=0: no lanes copy)
    try {
      models.push_back(Model::load(argv[1]));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kernel_ab: %s\n", e.what());
      return 2;
    }
    contexts.push_back(models.back()->new_cpu_context(512));
    set_weight_memory(before);
    Setting{}.apply();
  }
  const int V = models.front()->config().vocab_size;
  const std::vector<int32_t> prompt = runs::benchmark_tokens(V, 128);
  ForwardOutput out;
  // One figure per setting and round: decode tok/s, or the step's milliseconds.
  std::vector<std::vector<double>> figure(settings.size());
  for (int r = 0; r < rounds; ++r) {
    std::fprintf(stderr, "\r[kernel_ab] round %d/%d", r + 1, rounds);
    for (size_t s = 0; s < settings.size(); ++s) {
      settings[s].apply();
      Context* ctx = contexts[size_t(context_of[s])].get();
      ctx->truncate(0);
      Batch b = Batch::causal(prompt);
      b.logit_rows = {int(prompt.size()) - 1};
      ctx->forward(b, out);
      if (step > 0) {
        // time_steps warms up with forwards of the same size first, so the previous setting's forwards don't count.
        figure[s].push_back(median(runs::time_steps(*ctx, prompt, step, int(prompt.size()), 3)));
      } else {
        figure[s].push_back(runs::decode_tokens_per_second(*ctx, argmax(out.row_logits(0), V), tokens));
      }
    }
  }
  std::fprintf(stderr, "\n");
  Setting{}.apply();
  if (step > 0)
    std::printf("forward of %d new tokens after a 128-token prompt (ms, median of 3 per round), %d rounds; settings "
                "alternated within each round\n", step, rounds);
  else
    std::printf("decode tok/s, %d tokens after a 128-token prompt, %d rounds; settings alternated within each round\n",
                tokens, rounds);
  for (size_t s = 0; s < settings.size(); ++s) {
    const auto& v = figure[s];
    // Against the first setting round by round: how often better, and the geometric mean of the ratios (the host's
    // fast and slow spells come in bursts, so medians over the rounds move with them; ratios within a round do not).
    int better = 0;
    double log_ratio = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      better += step > 0 ? v[i] < figure[0][i] : v[i] > figure[0][i];
      log_ratio += std::log(v[i] / figure[0][i]);
    }
    std::printf("  %-28s median %8.2f (min %8.2f, max %8.2f); against '%s': better in %d of %d rounds, %.3fx %s "
                "(geometric mean)\n",
                settings[s].label.c_str(), median(v), *std::min_element(v.begin(), v.end()),
                *std::max_element(v.begin(), v.end()), settings[0].label.c_str(), better, rounds,
                std::exp(log_ratio / rounds), step > 0 ? "the time" : "the speed");
  }
  std::printf("rounds:");
  for (int r = 0; r < rounds; ++r) {
    std::printf("\n ");
    for (size_t s = 0; s < settings.size(); ++s) std::printf(" %8.2f", figure[s][size_t(r)]);
  }
  std::printf("\n");
}
