// specscope-cli compare: the same prompts with several methods in one process, vanilla first as the
// reference for speedup and (greedy) output equality.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/method_flags.h"
#include "engine/methods/speculative_generator.h"
#include "engine/methods/step_record_json.h"
#include "engine/model/model.h"
#include "engine/util/error.h"

namespace specscope::cli {

namespace {

struct Totals {
  long new_tokens = 0, target_forwards = 0, steps = 0, decode_tokens = 0;
  double decode_seconds = 0;
  int identical = 0, compared = 0;
  std::vector<StepRecord> steps_all;  // every prompt's steps, for the aggregate summary
};

std::string depth_str(const std::vector<double>& a) {
  std::ostringstream s;
  for (size_t i = 0; i < a.size() && i < 6; ++i) s << (i ? " " : "") << int(a[i] * 100 + 0.5);
  return a.empty() ? "-" : s.str();
}

}  // namespace

int cmd_compare(Args& args) {
  std::string path = model_path(args);
  auto prompts = read_prompts(args);
  std::string list = args.get_or("--methods", "vanilla,pld");
  bool chat = args.has("--chat");
  bool json = args.has("--json");
  GenerateOptions opts;
  opts.max_tokens = args.get_int("--max-tokens", 128);
  opts.sampling = read_sampling(args);
  std::vector<std::string> names;
  {
    std::stringstream ss(list);
    std::string m;
    while (std::getline(ss, m, ','))
      if (!m.empty()) names.push_back(m);
  }
  // Vanilla always runs first: it is the reference for speedup and output equality.
  names.erase(std::remove(names.begin(), names.end(), "vanilla"), names.end());
  names.insert(names.begin(), "vanilla");
  std::vector<MethodSpec> specs;
  for (auto& n : names) specs.push_back(read_method_spec(args, n));
  args.finish();

  auto model = Model::load(path);
  std::vector<std::unique_ptr<Method>> methods;
  for (auto& s : specs) methods.push_back(make_method(s, *model));

  std::vector<Totals> totals(names.size());
  nlohmann::json out_json = {{"model", path}, {"sampling", opts.sampling.describe()}, {"prompts", nlohmann::json::array()}};
  for (size_t p = 0; p < prompts.size(); ++p) {
    auto ids = encode_prompt(*model, prompts[p], chat);
    std::vector<int32_t> reference;
    double vanilla_tps = 0;
    nlohmann::json pj = {{"prompt", prompts[p]}, {"runs", nlohmann::json::array()}};
    for (size_t m = 0; m < names.size(); ++m) {
      // Progress: rewritten in place on a terminal, one line per run in logs.
      std::fprintf(stderr, isatty(2) ? "\r[compare] prompt %zu/%zu, %s          " : "[compare] prompt %zu/%zu, %s\n",
                   p + 1, prompts.size(), names[m].c_str());
      auto ctx = model->new_cpu_context(0);
      auto res = generate_speculative(*model, *ctx, *methods[m], ids, opts);
      auto& s = res.summary;
      if (m == 0) {
        reference = res.gen.tokens;
        vanilla_tps = s.tokens_per_second;
      }
      s.speedup_vs_vanilla = vanilla_tps > 0 ? s.tokens_per_second / vanilla_tps : kNoValue;
      bool same = res.gen.tokens == reference;
      auto& t = totals[m];
      t.new_tokens += s.new_tokens;
      t.target_forwards += s.target_forwards;
      t.steps += s.steps;
      t.decode_tokens += std::lround(s.tau * s.steps);
      t.decode_seconds += s.decode_seconds;
      t.compared++;
      t.identical += same;
      t.steps_all.insert(t.steps_all.end(), res.steps.begin(), res.steps.end());
      nlohmann::json rj = to_json(s);
      rj["identical_to_vanilla"] = same;
      pj["runs"].push_back(rj);
    }
    out_json["prompts"].push_back(pj);
  }
  if (isatty(2)) std::fprintf(stderr, "\r%60s\r", "");

  const bool greedy = opts.sampling.greedy();
  nlohmann::json agg = nlohmann::json::array();
  double vanilla_tps = totals[0].decode_seconds > 0 ? totals[0].new_tokens / totals[0].decode_seconds : 0;
  if (!json) {
    std::printf("%zu prompt(s), %s, max %d tokens, model %s\n", prompts.size(), opts.sampling.describe().c_str(),
                opts.max_tokens, path.c_str());
    std::printf("%-10s %8s %8s %6s %-20s %9s %8s %s\n", "method", "tokens", "fwds", "tau", "accept% by depth",
                "tok/s", "speedup", greedy ? "same as vanilla" : "");
  }
  bool all_same = true;
  for (size_t m = 0; m < names.size(); ++m) {
    auto& t = totals[m];
    double tau = t.steps ? double(t.decode_tokens) / t.steps : 0;
    double tps = t.decode_seconds > 0 ? t.new_tokens / t.decode_seconds : 0;
    const std::vector<double> acc = summarize(names[m], t.steps_all).acceptance_by_depth;
    all_same &= t.identical == t.compared;
    agg.push_back({{"method", names[m]},
                   {"new_tokens", t.new_tokens},
                   {"target_forwards", t.target_forwards},
                   {"tau", tau},
                   {"acceptance_by_depth", acc},
                   {"tokens_per_second", tps},
                   {"speedup_vs_vanilla", vanilla_tps > 0 ? tps / vanilla_tps : 0},
                   {"identical_to_vanilla", t.identical},
                   {"prompts", t.compared}});
    if (!json) {
      std::printf("%-10s %8ld %8ld %6.2f %-20s %9.1f %7.2fx", names[m].c_str(), t.new_tokens, t.target_forwards, tau,
                  depth_str(acc).c_str(), tps, vanilla_tps > 0 ? tps / vanilla_tps : 0);
      if (greedy) std::printf(" %d/%d", t.identical, t.compared);
      std::printf("\n");
    }
  }
  if (json) {
    out_json["aggregate"] = agg;
    if (greedy) out_json["all_identical"] = all_same;
    std::printf("%s\n", out_json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (greedy) {
    std::printf("verdict: %s\n", all_same ? "all greedy outputs identical to vanilla"
                                          : "MISMATCH: some greedy outputs differ from vanilla (a bug)");
  }
  return greedy && !all_same ? 1 : 0;
}

}  // namespace specscope::cli
