// Would a larger base let speculation pay on this CPU? (issue 19, item 3: "measure whether a larger base ... lets
// speculation pay on the CPU"). The shipped base (14M parameters, bf16, 28 MB) stays in the last-level cache, so a
// one-token step is cheap and a tree's extra rows are nearly as dear as the first; a draft head costs a fifth of a
// step. A base too large for the cache streams its weights from memory for every step, which many rows share.
//
// This measures the costs and re-weighs a real calibration with them; it trains nothing:
// - for the shipped base and for each larger shape (random weights: cost does not depend on their values), the
//   step-cost curve (runs::measure_step_cost) and one forward of a one-layer model of the same width (the cost of a
//   draft head's layer) taken in turns with the base's steps, as a speculative step has them (runs::model_turns.h:
//   the head's forward pays for the base's having evicted it);
// - tree=auto calibrations of the shipped family (`compare --json`, each lane's tree_auto.trials: for each size
//   tried, its tau, the rows it verifies and its drafting time per step), measured on the shipped base. A calibration
//   times a few milliseconds of each size, so one taken in a busy spell of this VM reads every step dearer (two runs
//   minutes apart expected EAGLE-3 at 1.17x and 0.93x on the shipped base): several are given, and each trial's
//   drafting time is their median (tau is the same in each: greedy and deterministic);
// - for each shape (the shipped one too), every trial's verification and vanilla's token read off the shape's curve,
//   its drafting time scaled by the heads' cost ratio (methods with a model-free drafter, pld and lookahead: kept);
//   then tree=auto's own choice (runs::choose_tree) among them. The shipped row's race is printed beside it: how far
//   the model is from what the shipped family measured.
// The assumption, printed beside the figures: a retrained head accepts on the larger base as the shipped heads do on
// the shipped base (the same tau per tree). The tau each choice needs for 1.3x is printed too, so the projection can
// be judged without it. Drafting time that is not a head's forward (tree building, top-k over the vocabulary) is
// scaled with the head, which overstates it: the projection errs low. SpS and streaming are left out (their
// drafters are whole models whose size for a larger base is a choice of its own).
//
//   base_size_projection --calibration COMPARE.json... --reference BASE HEAD [--shape NAME BASE HEAD]...
//                        [--repeat 9] [--rounds 120] [--out FILE.json]
// BASE and HEAD are model folders (bench/make_synthetic_llama.py makes them; the reference BASE is normally the
// shipped base itself, HEAD a one-layer model of its width).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cpu/thread_pool.h"
#include "engine/methods/method_registry.h"
#include "engine/model/backend.h"
#include "engine/model/model.h"
#include "engine/util/median.h"
#include "runs/model_turns.h"
#include "runs/step_cost.h"
#include "runs/tree_tuner.h"

using namespace specscope;

namespace {

struct Shape {
  std::string name, base, head;
};

struct Costs {
  Shape shape;
  int64_t parameters = 0, head_parameters = 0;
  runs::StepCost curve;
  double head_in_turns_ms = 0;  // one forward of the head model after the base's step, median over the step sizes
  double head_alone_ms = 0;
};

// One calibrated lane of the shipped family.
struct Lane {
  std::string method;
  bool drafts_with_a_head = false;  // its drafting time scales with the head's cost
  double raced_tau = 0, raced_speedup = 0;  // what the lane measured in the race the calibration came with
  std::vector<runs::TreeTrial> trials;
};

constexpr int kContext = 128;

Costs measure(const Shape& s, int repeat, int rounds) {
  std::fprintf(stderr, "[projection] %s: step costs and a head's forwards in turns\n", s.name.c_str());
  Costs c;
  c.shape = s;
  auto base = Model::load(s.base);
  auto head = Model::load(s.head);
  c.parameters = base->parameter_count();
  c.head_parameters = head->parameter_count();
  c.curve = runs::measure_step_cost(*base, Backend::Cpu, kContext, repeat);
  auto bctx = new_context(*base, Backend::Cpu, 0);
  auto hctx = new_context(*head, Backend::Cpu, 0);
  const auto bt = runs::benchmark_tokens(base->config().vocab_size, kContext);
  const auto ht = runs::benchmark_tokens(head->config().vocab_size, kContext);
  ForwardOutput out;
  bctx->forward(Batch::causal(bt), out);
  hctx->forward(Batch::causal(ht), out);
  const auto turns = runs::measure_model_turns(*bctx, bt, kContext, *hctx, ht, kContext, {1, 4, 8, 16}, 3, rounds);
  std::vector<double> in_turns;
  for (const auto& st : turns.steps) in_turns.push_back(st.other_in_turns_ms);
  c.head_in_turns_ms = median(in_turns);
  c.head_alone_ms = turns.other_alone_ms;
  return c;
}

std::vector<Lane> read_one_calibration(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error(path + ": cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not JSON (" + e.what() + ")");
  }
  std::vector<Lane> lanes;
  for (const auto& a : j.value("aggregate", nlohmann::json::array())) {
    const std::string method = a.value("method", "");
    if (!a.contains("tree_auto") || !a["tree_auto"].contains("trials")) continue;
    const MethodNeed need = method_info(method).needs;
    // SpS's drafter and streaming's target are whole models whose size for a larger base is a choice of its own.
    if (need == MethodNeed::DraftModel || need == MethodNeed::StreamingTarget) continue;
    const auto& ta = a["tree_auto"];
    Lane l;
    l.method = method;
    l.drafts_with_a_head = need != MethodNeed::Nothing;  // pld and lookahead draft without a model
    l.raced_tau = a.value("tau", 0.0);
    l.raced_speedup = a.value("speedup_vs_vanilla", 0.0);
    for (const auto& t : ta["trials"]) {
      runs::TreeTrial tr;
      for (const auto& [k, v] : t.at("options").items()) tr.options[k] = v.get<std::string>();
      tr.tau = t.at("tau").get<double>();
      tr.verify_tokens = t.at("verify_tokens").get<double>();
      tr.draft_ms = t.at("draft_ms").get<double>();
      l.trials.push_back(tr);
    }
    lanes.push_back(std::move(l));
  }
  if (lanes.empty())
    throw std::runtime_error(path + ": no lane with tree_auto.trials (a `compare --json` of tree=auto lanes)");
  return lanes;
}

// The shipped lane's trials re-weighed for `to` (see the top of the file): verification and vanilla's token from
// `to`'s step-cost curve (the shipped row too: the calibrations' own verification times, a few milliseconds each,
// moved with this VM's spells by more than the shapes differ), drafting from the calibrations scaled by the heads'
// cost ratio.
runs::TreeChoice project(const Lane& lane, const Costs& from, const Costs& to) {
  const double head_ratio = lane.drafts_with_a_head ? to.head_in_turns_ms / from.head_in_turns_ms : 1.0;
  std::vector<runs::TreeTrial> trials = lane.trials;
  for (auto& t : trials) {
    t.verify_ms = 0;  // choose_tree reads it off the curve
    t.draft_ms *= head_ratio;
  }
  return runs::choose_tree(std::move(trials), to.curve);
}

// The tau the chosen trial `t` of `c` would need for `speedup` at its projected step time.
double tau_needed(const runs::TreeChoice& c, const runs::TreeTrial& t, double speedup) {
  return speedup * (t.verify_ms + t.draft_ms) * c.vanilla_tokens_per_second / 1000.0;
}

// Options for the table: a tree-choices file by its name (its folder is a cache's).
std::string options_text(std::map<std::string, std::string> options) {
  for (auto& [k, v] : options)
    if (k == "tree-choices") v = std::filesystem::path(v).filename().string();
  return runs::tree_options_text(options);
}

// Several calibrations as one: each trial's drafting time the median over the files; the race's figures the first file's
// (the one raced on every prompt).
std::vector<Lane> read_calibrations(const std::vector<std::string>& paths) {
  std::vector<std::vector<Lane>> all;
  for (const auto& p : paths) all.push_back(read_one_calibration(p));
  std::vector<Lane> merged = all.front();
  for (auto& lane : merged) {
    std::vector<std::vector<double>> draft(lane.trials.size());
    for (const auto& file : all)
      for (const auto& other : file) {
        if (other.method != lane.method) continue;
        for (size_t i = 0; i < lane.trials.size(); ++i)
          for (const auto& t : other.trials)
            if (t.options == lane.trials[i].options) draft[i].push_back(t.draft_ms);
      }
    for (size_t i = 0; i < lane.trials.size(); ++i) lane.trials[i].draft_ms = median(draft[i]);
  }
  return merged;
}

const runs::TreeTrial* chosen(const runs::TreeChoice& c) {
  for (const auto& t : c.trials)
    if (t.options == c.options) return &t;
  return nullptr;
}

int usage() {
  std::fprintf(stderr,
               "usage: base_size_projection --calibration COMPARE.json... --reference BASE HEAD "
               "[--shape NAME BASE HEAD]... [--repeat 9] [--rounds 120] [--out FILE.json]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> calibrations;
  std::string out_path;
  std::vector<Shape> shapes;
  int repeat = 9, rounds = 120;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto need = [&](int n) {
      if (i + n >= argc) throw std::runtime_error(a + ": expects " + std::to_string(n) + " value(s)");
    };
    try {
      if (a == "--calibration") {
        need(1);
        while (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) calibrations.push_back(argv[++i]);
      }
      else if (a == "--reference") need(2), shapes.insert(shapes.begin(), {"shipped", argv[i + 1], argv[i + 2]}), i += 2;
      else if (a == "--shape") need(3), shapes.push_back({argv[i + 1], argv[i + 2], argv[i + 3]}), i += 3;
      else if (a == "--repeat") need(1), repeat = std::stoi(argv[++i]);
      else if (a == "--rounds") need(1), rounds = std::stoi(argv[++i]);
      else if (a == "--out") need(1), out_path = argv[++i];
      else return usage();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    }
  }
  if (calibrations.empty() || shapes.empty() || shapes.front().name != "shipped" || repeat < 1 || rounds < 1)
    return usage();
  try {
    const std::vector<Lane> lanes = read_calibrations(calibrations);
    std::vector<Costs> costs;
    for (const auto& s : shapes) costs.push_back(measure(s, repeat, rounds));
    const Costs& ref = costs.front();

    nlohmann::json j = {{"calibrations", calibrations}, {"threads", cpu::team_size()}, {"context", kContext},
                        {"repeat", repeat}, {"rounds", rounds}, {"shapes", nlohmann::json::array()}};
    std::printf("shape      parameters  1 token   8 / 16 tokens (x 1)   head forward in turns (alone)   of a step\n");
    for (const auto& c : costs) {
      const double one = c.curve.at(1);
      std::printf("%-10s %9.1fM %7.3f ms   %5.2f / %5.2f          %6.3f ms (%6.3f)              %5.1f%%\n",
                  c.shape.name.c_str(), c.parameters / 1e6, one, c.curve.at(8) / one, c.curve.at(16) / one,
                  c.head_in_turns_ms, c.head_alone_ms, 100.0 * c.head_in_turns_ms / one);
      nlohmann::json sj = {{"name", c.shape.name},         {"base", c.shape.base},
                           {"head", c.shape.head},         {"parameters", c.parameters},
                           {"head_parameters", c.head_parameters}, {"head_in_turns_ms", c.head_in_turns_ms},
                           {"head_alone_ms", c.head_alone_ms},     {"step_ms", nlohmann::json::array()},
                           {"methods", nlohmann::json::array()}};
      for (const auto& [n, ms] : c.curve.ms) sj["step_ms"].push_back({n, ms});
      j["shapes"].push_back(sj);
    }
    std::printf("\nprojected with the shipped heads' tau per tree (tree=auto's choice among the calibrated sizes):\n");
    std::printf("%-10s %-10s %-52s %6s %9s %13s   %s\n", "shape", "method", "chosen", "tau", "expected", "tau for 1.3x",
                "raced (shipped)");
    for (size_t s = 0; s < costs.size(); ++s)
      for (const auto& lane : lanes) {
        const runs::TreeChoice c = project(lane, ref, costs[s]);
        const runs::TreeTrial* t = chosen(c);
        if (!t) continue;
        const std::string opts = options_text(c.options);
        const double tau_for_1_3x = tau_needed(c, *t, 1.3);
        std::printf("%-10s %-10s %-52s %6.2f %8.2fx %13.2f", costs[s].shape.name.c_str(), lane.method.c_str(),
                    opts.substr(0, 52).c_str(), t->tau, c.expected_speedup, tau_for_1_3x);
        if (s == 0) std::printf("   tau %.2f, %.2fx", lane.raced_tau, lane.raced_speedup);
        std::printf("\n");
        j["shapes"][s]["methods"].push_back({{"method", lane.method},
                                             {"options", c.options},
                                             {"tau", t->tau},
                                             {"verify_ms", t->verify_ms},
                                             {"draft_ms", t->draft_ms},
                                             {"vanilla_ms", 1000.0 / c.vanilla_tokens_per_second},
                                             {"expected_speedup", c.expected_speedup},
                                             {"tau_for_1_3x", tau_for_1_3x}});
      }
    if (!out_path.empty()) {
      std::ofstream o(out_path);
      o << j.dump(2) << "\n";
      if (!o) throw std::runtime_error(out_path + ": cannot write");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return 0;
}
