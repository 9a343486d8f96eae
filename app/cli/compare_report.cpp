#include "app/cli/compare_report.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/methods/step_record_json.h"

namespace specscope::cli {

namespace {

struct Totals {
  long new_tokens = 0, target_forwards = 0, steps = 0, decode_tokens = 0;
  double decode_seconds = 0;
  int identical = 0, compared = 0;
  std::vector<StepRecord> steps_all;  // every prompt's steps, for the aggregate acceptance by depth
};

std::string depth_str(const std::vector<double>& a) {
  std::ostringstream s;
  for (size_t i = 0; i < a.size() && i < 6; ++i) s << (i ? " " : "") << int(a[i] * 100 + 0.5);
  return a.empty() ? "-" : s.str();
}

}  // namespace

int print_compare_report(const CompareReport& rep, bool json) {
  const auto& names = rep.methods;
  std::vector<Totals> totals(names.size());
  nlohmann::json out_json = {{"model", rep.model}, {"sampling", rep.sampling}, {"prompts", nlohmann::json::array()}};
  for (size_t p = 0; p < rep.prompts.size(); ++p)
    out_json["prompts"].push_back({{"prompt", rep.prompts[p]}, {"runs", nlohmann::json::array()}});
  for (const auto& r : rep.runs) {
    const auto& s = r.summary;
    auto& t = totals[r.method];
    t.new_tokens += s.new_tokens;
    t.target_forwards += s.target_forwards;
    t.steps += s.steps;
    t.decode_tokens += std::lround(s.tau * s.steps);
    t.decode_seconds += s.decode_seconds;
    t.compared++;
    t.identical += r.identical;
    t.steps_all.insert(t.steps_all.end(), r.steps.begin(), r.steps.end());
    nlohmann::json rj = to_json(s);
    rj["identical_to_vanilla"] = r.identical;
    out_json["prompts"][r.prompt]["runs"].push_back(rj);
  }

  nlohmann::json agg = nlohmann::json::array();
  const double vanilla_tps = totals[0].decode_seconds > 0 ? totals[0].new_tokens / totals[0].decode_seconds : 0;
  if (!json) {
    std::printf("%zu prompt(s), %s, max %d tokens, model %s\n", rep.prompts.size(), rep.sampling.c_str(),
                rep.max_tokens, rep.model.c_str());
    std::printf("%-10s %8s %8s %6s %-20s %9s %8s %s\n", "method", "tokens", "fwds", "tau", "accept% by depth",
                "tok/s", "speedup", rep.greedy ? "same as vanilla" : "");
  }
  bool all_same = true;
  for (size_t m = 0; m < names.size(); ++m) {
    auto& t = totals[m];
    const double tau = t.steps ? double(t.decode_tokens) / t.steps : 0;
    const double tps = t.decode_seconds > 0 ? t.new_tokens / t.decode_seconds : 0;
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
      if (rep.greedy) std::printf(" %d/%d", t.identical, t.compared);
      std::printf("\n");
    }
  }
  if (json) {
    out_json["aggregate"] = agg;
    if (rep.greedy) out_json["all_identical"] = all_same;
    std::printf("%s\n", out_json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (rep.greedy) {
    std::printf("verdict: %s\n", all_same ? "all greedy outputs identical to vanilla"
                                          : "MISMATCH: some greedy outputs differ from vanilla (a bug)");
  }
  return rep.greedy && !all_same ? 1 : 0;
}

}  // namespace specscope::cli
