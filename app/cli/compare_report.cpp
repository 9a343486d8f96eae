#include "app/cli/compare_report.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/methods/step_record_json.h"
#include "engine/util/sha256.h"
#include "runs/tree_tuner.h"

namespace specscope::cli {

namespace {

// A lane's tau and tokens/s over some of its runs: decoding tokens and steps, new tokens and decode seconds.
struct RateSums {
  long new_tokens = 0, steps = 0, decode_tokens = 0;
  double decode_seconds = 0;
  int runs = 0;
  void add(const RunSummary& s) {
    new_tokens += s.new_tokens;
    steps += s.steps;
    decode_tokens += std::lround(s.tau * s.steps);
    decode_seconds += s.decode_seconds;
    ++runs;
  }
  double tau() const { return steps ? double(decode_tokens) / steps : 0; }
  double tokens_per_second() const { return decode_seconds > 0 ? new_tokens / decode_seconds : 0; }
};

struct Totals {
  RateSums all;
  // Over the job's first kCalibrationPrompts prompts, the ones tree=auto calibrates on: its expectation is for those,
  // and beside them the rest of the gap is the other prompts.
  RateSums calibration;
  long target_forwards = 0;
  int identical = 0;
  std::vector<StepRecord> steps_all;  // every prompt's steps, for the aggregate acceptance by depth
};

std::string depth_str(const std::vector<double>& a) {
  std::ostringstream s;
  for (size_t i = 0; i < a.size() && i < 6; ++i) s << (i ? " " : "") << int(a[i] * 100 + 0.5);
  return a.empty() ? "-" : s.str();
}

bool same_target(const ModelIdentity& a, const ModelIdentity& b) {
  return a.path == b.path && a.config_sha256 == b.config_sha256 && a.weights_index_sha256 == b.weights_index_sha256;
}

// The SHA-256 of a run's output tokens (each step's committed tokens, int32 little-endian, in order): equal
// digests mean token-for-token equal outputs, so runs on two backends or machines compare without the tokens.
std::string output_digest(const std::vector<StepRecord>& steps) {
  std::string bytes;
  for (const auto& s : steps)
    for (int32_t t : s.committed)
      for (int b = 0; b < 4; ++b) bytes.push_back(char((uint32_t(t) >> (8 * b)) & 0xffu));
  return sha256_hex(bytes);
}

// A tree=auto choice's expectation: its options, expected speedup and the tau its calibration measured (the chosen
// trial's); null when there is no choice or it names no trial.
nlohmann::json expected_json(const nlohmann::json& tree_auto) {
  if (!tree_auto.is_object() || !tree_auto.contains("options")) return nullptr;
  nlohmann::json out = {{"options", tree_auto["options"]},
                        {"expected_speedup", tree_auto.value("expected_speedup", 0.0)},
                        {"expected_tokens_per_second", tree_auto.value("expected_tokens_per_second", 0.0)}};
  for (const auto& t : tree_auto.value("trials", nlohmann::json::array()))
    if (t.value("options", nlohmann::json()) == tree_auto["options"]) out["expected_tau"] = t.value("tau", 0.0);
  // The whole calibration, as `run --json` gives it: every size tried with its tau and step times, and vanilla's rate
  // in the same calibration (what bench/base_size_projection re-weighs for other targets).
  if (tree_auto.contains("trials")) out["trials"] = tree_auto["trials"];
  if (tree_auto.contains("expected_vanilla_tokens_per_second"))
    out["expected_vanilla_tokens_per_second"] = tree_auto["expected_vanilla_tokens_per_second"];
  return out;
}

nlohmann::json identity_json(const ModelIdentity& m) {
  return {{"path", m.path}, {"architecture", m.architecture}, {"config_sha256", m.config_sha256},
          {"weights_index_sha256", m.weights_index_sha256}};
}

}  // namespace

CompareReport make_compare_report(const std::string& sampling, int max_tokens, bool greedy,
                                  std::vector<ReportRun> runs, std::string backend, std::string device) {
  CompareReport rep;
  rep.backend = std::move(backend);
  rep.device = std::move(device);
  rep.sampling = sampling;
  rep.max_tokens = max_tokens;
  rep.greedy = greedy;
  for (auto& r : runs) {
    size_t t = 0;
    while (t < rep.targets.size() && !same_target(rep.targets[t], r.target)) ++t;
    if (t == rep.targets.size()) rep.targets.push_back(r.target);
    size_t row = 0;
    while (row < rep.rows.size() && !(rep.rows[row].label == r.label && rep.rows[row].target_index == int(t))) ++row;
    if (row == rep.rows.size()) {
      bool has_reference = false;
      for (const auto& x : rep.rows) has_reference |= x.reference && x.target_index == int(t);
      rep.rows.push_back({r.label, r.method, r.target, int(t), r.method.name == "vanilla" && !has_reference,
                          r.tree_auto});
    }
    size_t p = 0;
    while (p < rep.prompts.size() && rep.prompts[p] != r.prompt) ++p;
    if (p == rep.prompts.size()) rep.prompts.push_back(r.prompt);
    rep.runs.push_back({p, row, std::move(r.summary), r.identical, std::move(r.steps)});
  }
  if (!rep.targets.empty()) rep.model = rep.targets[0].path;
  return rep;
}

int print_compare_report(const CompareReport& rep, bool json) {
  std::vector<Totals> totals(rep.rows.size());
  nlohmann::json out_json = {{"model", rep.model}, {"sampling", rep.sampling}, {"prompts", nlohmann::json::array()},
                             {"targets", nlohmann::json::array()}};
  if (!rep.backend.empty()) out_json["backend"] = rep.backend;
  if (!rep.device.empty()) out_json["device"] = rep.device;
  for (const auto& t : rep.targets) out_json["targets"].push_back(identity_json(t));
  for (size_t p = 0; p < rep.prompts.size(); ++p)
    out_json["prompts"].push_back({{"prompt", rep.prompts[p]}, {"runs", nlohmann::json::array()}});
  for (const auto& r : rep.runs) {
    const auto& s = r.summary;
    auto& t = totals[r.row];
    t.all.add(s);
    if (r.prompt < size_t(runs::kCalibrationPrompts)) t.calibration.add(s);
    t.target_forwards += s.target_forwards;
    t.identical += r.identical;
    t.steps_all.insert(t.steps_all.end(), r.steps.begin(), r.steps.end());
    nlohmann::json rj = to_json(s);
    rj["lane"] = rep.rows[r.row].label;
    rj["target"] = rep.rows[r.row].target_index;
    rj["identical_to_vanilla"] = r.identical;
    rj["output_sha256"] = output_digest(r.steps);
    out_json["prompts"][r.prompt]["runs"].push_back(rj);
  }

  // Each row's speedup is against its own target's reference row.
  std::vector<double> reference_tps(rep.targets.size(), 0.0), reference_calibration_tps(rep.targets.size(), 0.0);
  for (size_t i = 0; i < rep.rows.size(); ++i) {
    if (!rep.rows[i].reference) continue;
    const size_t target = size_t(rep.rows[i].target_index);
    reference_tps[target] = totals[i].all.tokens_per_second();
    reference_calibration_tps[target] = totals[i].calibration.tokens_per_second();
  }
  const bool many_targets = rep.targets.size() > 1;
  nlohmann::json agg = nlohmann::json::array();
  if (!json) {
    std::printf("%zu prompt(s), %s, max %d tokens, model %s%s%s\n", rep.prompts.size(), rep.sampling.c_str(),
                rep.max_tokens, rep.model.c_str(), rep.device.empty() ? "" : ", on ", rep.device.c_str());
    if (many_targets) {
      std::printf("targets:");
      for (size_t t = 0; t < rep.targets.size(); ++t) std::printf(" [%zu] %s", t + 1, rep.targets[t].path.c_str());
      std::printf("\nspeedups and identity are against each lane's own target's vanilla reference\n");
    }
    std::printf("%-22s %s%8s %8s %6s %-20s %9s %8s %s\n", "lane", many_targets ? "tgt " : "", "tokens", "fwds", "tau",
                "accept% by depth", "tok/s", "speedup", rep.greedy ? "same as vanilla" : "");
  }
  bool all_same = true;
  for (size_t i = 0; i < rep.rows.size(); ++i) {
    const auto& row = rep.rows[i];
    auto& t = totals[i];
    const double tau = t.all.tau();
    const double tps = t.all.tokens_per_second();
    const double ref = reference_tps[size_t(row.target_index)];
    const std::vector<double> acc = summarize(row.method.name, t.steps_all).acceptance_by_depth;
    all_same &= t.identical == t.all.runs;
    agg.push_back({{"lane", row.label},
                   {"method", row.method.name},
                   {"reference", row.reference},
                   {"target", identity_json(row.target)},
                   {"options", row.method.options},
                   {"draft", row.method.draft_path},
                   {"head", row.method.head_path},
                   {"new_tokens", t.all.new_tokens},
                   {"target_forwards", t.target_forwards},
                   {"tau", tau},
                   {"acceptance_by_depth", acc},
                   {"tokens_per_second", tps},
                   {"speedup_vs_vanilla", ref > 0 ? tps / ref : 0},
                   {"identical_to_vanilla", t.identical},
                   {"prompts", t.all.runs}});
    if (auto e = expected_json(row.tree_auto); !e.is_null()) {
      // Measured on the prompts the calibration read, when the race has others too.
      const double ref_calibration = reference_calibration_tps[size_t(row.target_index)];
      const RateSums& c = t.calibration;
      if (c.runs > 0 && c.runs < t.all.runs && c.steps > 0 && c.decode_seconds > 0 && ref_calibration > 0)
        e["calibration_prompts"] = {{"prompts", c.runs},
                                    {"tau", c.tau()},
                                    {"speedup_vs_vanilla", c.tokens_per_second() / ref_calibration}};
      agg.back()["tree_auto"] = e;
    }
    if (!json) {
      std::string label = row.label.size() > 22 ? row.label.substr(0, 21) + "~" : row.label;
      std::printf("%-22s ", label.c_str());
      if (many_targets) std::printf("[%d] ", row.target_index + 1);
      std::printf("%8ld %8ld %6.2f %-20s %9.1f %7.2fx", t.all.new_tokens, t.target_forwards, tau, depth_str(acc).c_str(), tps,
                  ref > 0 ? tps / ref : 0);
      if (rep.greedy) std::printf(" %d/%d", t.identical, t.all.runs);
      std::printf("\n");
    }
  }
  // tree=auto's expectation beside what the lane measured: the calibration's tau and speedup against the race's.
  if (!json)
    for (const auto& a : agg)
      if (a.contains("tree_auto")) {
        const auto& e = a["tree_auto"];
        std::printf("tree auto %s: expected tau %.2f and %.2fx, measured %.2f and %.2fx",
                    a["lane"].get<std::string>().c_str(), e.value("expected_tau", 0.0), e.value("expected_speedup", 0.0),
                    a["tau"].get<double>(), a["speedup_vs_vanilla"].get<double>());
        if (e.contains("calibration_prompts")) {
          const auto& c = e["calibration_prompts"];
          std::printf(" (%.2f and %.2fx on the %d prompts it calibrated on)", c["tau"].get<double>(),
                      c["speedup_vs_vanilla"].get<double>(), c["prompts"].get<int>());
        }
        std::printf("\n");
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
