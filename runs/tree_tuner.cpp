#include "runs/tree_tuner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "engine/cpu/weight_form.h"
#include "engine/cpu/thread_pool.h"
#include "engine/methods/speculative_generator.h"
#include "engine/util/error.h"
#include "engine/util/median.h"
#include "engine/util/sha256.h"
#include "runs/cost_model.h"
#include "runs/cache_file.h"
#include "runs/medusa_tree.h"

namespace specscope::runs {

namespace fs = std::filesystem;

// Calibration rounds (tune_tree): the medians of three runs of each candidate still in the race after the first
// (within kStillRacing of its best). One round where a step's milliseconds dwarf the machine's drift (a large model
// on this CPU), or where the later rounds would take longer than kCalibrationBudgetSeconds; on a small model, where
// one timing of a sub-millisecond step is mostly drift, all three. (It was one round whenever the first took 2 s:
// SpS's 26 candidates on the shipped family did, and its int8 and int4 drafters were told apart by one timing each.)
constexpr int kCalibrationRounds = 3;
constexpr double kStillRacing = 0.85;
constexpr double kLargeStepMs = 5.0;
constexpr double kCalibrationBudgetSeconds = 6.0;

bool tree_tunable(const std::string& m) {
  return m == "sps" || m == "pld" || m == "eagle1" || m == "eagle2" || m == "eagle3" || m == "lookahead" ||
         m == "medusa" || m == "streaming";
}

bool tree_size_given(const MethodSpec& spec) {
  if (spec.name == "medusa" || spec.name == "eagle1") return spec.options.count("tree-choices") > 0;
  for (const auto& candidate : tree_candidates(spec.name))
    for (const auto& [key, value] : candidate)
      if (spec.options.count(key)) return true;
  return false;
}

std::vector<std::map<std::string, std::string>> tree_candidates(const std::string& m) {
  std::vector<std::map<std::string, std::string>> out;
  // SpS: fixed chains, then long chains cut where the drafter's confidence drops (confidence-threshold). On the
  // shipped family (draft-small, 40 held-out prompts, alternated lanes) gamma 8 cut at 0.6-0.9 ran 1.15-1.19x
  // against 1.02x for a fixed gamma 2; over 80 prompts, cuts at 0.4 / 0.5 / 0.6 / 0.7 / 0.8 ran 1.27 / 1.28 / 1.29 /
  // 1.28 / 1.24x in one run: a flat optimum, so three points across it.
  if (m == "sps") {
    for (int g : {1, 2, 3, 4}) out.push_back({{"gamma", std::to_string(g)}, {"confidence-threshold", "0"}});
    for (const char* c : {"0.4", "0.6", "0.8"}) out.push_back({{"gamma", "8"}, {"confidence-threshold", c}});
  }
  if (m == "pld")
    for (int d : {1, 2, 3, 5, 8, 10}) out.push_back({{"num-draft", std::to_string(d)}});
  if (m == "lookahead")  // (W, N, G): the Jacobi window, the n-gram length, the n-grams verified per step
    for (auto [w, n, g] : std::vector<std::tuple<int, int, int>>{
             {2, 2, 2}, {3, 3, 3}, {4, 3, 4}, {5, 4, 5}, {7, 4, 7}, {10, 5, 10}, {15, 5, 15}})
      out.push_back({{"window", std::to_string(w)}, {"ngram", std::to_string(n)}, {"guesses", std::to_string(g)}});
  // Speculative Streaming: streams per step (gamma), candidates per stream and the node budget (0: the whole k-ary
  // tree; else its most probable paths), then the model's own (its streaming_config.json). On the shipped streaming
  // model (40 held-out prompts, one race) gamma 1 / top-1 ran 0.92x, 2 / 1 0.85x, 2 / 2 0.77x and the then default
  // 3 / 2 0.53-0.54x: each stream is rows in the target's own forward, and every node a row through the bottom layers.
  // Budgets of 4 and 8 nodes drawn from the model's default streams (no gamma given) draft deeper paths than a whole
  // tree of that size.
  if (m == "streaming") {
    for (auto [g, k] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {2, 2}})
      out.push_back({{"gamma", std::to_string(g)}, {"stream-top-k", std::to_string(k)}, {"total-tokens", "0"}});
    for (int t : {4, 8}) out.push_back({{"stream-top-k", "4"}, {"total-tokens", std::to_string(t)}});
    out.push_back({});  // the model's own
  }
  if (m == "eagle2" || m == "eagle3")
    for (auto [t, d, k] : std::vector<std::tuple<int, int, int>>{
             {3, 2, 1}, {4, 3, 1}, {6, 3, 2}, {8, 4, 2}, {12, 4, 3}, {16, 5, 4}, {24, 5, 6}, {32, 5, 8}, {60, 5, 10}})
      out.push_back({{"total-tokens", std::to_string(t)}, {"depth", std::to_string(d)}, {"draft-top-k", std::to_string(k)}});
  return out;
}

namespace {
// Appends to `candidates` each one `which` picks again with `key` (draft-weights, head-weights) set to each of
// `forms` this CPU has the kernel for, unless the spec already says which weights.
void add_weight_forms(std::vector<std::map<std::string, std::string>>& candidates, const MethodSpec& spec,
                      const std::string& key, std::initializer_list<cpu::WeightForm> forms,
                      const std::function<bool(const std::map<std::string, std::string>&)>& which) {
  if (spec.options.count(key)) return;  // the spec says which weights
  const size_t n = candidates.size();
  for (auto form : forms) {
    if (!cpu::weight_form_supported(form)) continue;
    for (size_t i = 0; i < n; ++i)
      if (which(candidates[i])) {
        auto q = candidates[i];
        q[key] = cpu::weight_form_name(form);
        candidates.push_back(std::move(q));
      }
  }
}
}  // namespace

std::vector<std::map<std::string, std::string>> tree_candidates(const MethodSpec& spec) {
  auto sizes = tree_candidates(spec.name);
  // EAGLE-2/3's head on int4 weights (head-weights=int4), tried on the small trees, the sizes that win on a CPU. On
  // the shipped family (80 held-out prompts, one race, tree=auto in each lane) eagle3 ran 1.26x with an int4 head
  // against 1.03x as loaded, eagle2 1.10x against 1.04x (int8: 1.04x, so int8 is not tried). The form covers the LM
  // head the drafts read too: EAGLE-3's own, and for EAGLE-1/2 a copy of the target's (EagleHead::load).
  if (spec.name == "eagle2" || spec.name == "eagle3")
    add_weight_forms(sizes, spec, "head-weights", {cpu::WeightForm::Int4},
                     [](const auto& c) { return std::stoi(c.at("total-tokens")) <= 8; });
  if (spec.name != "sps") return sizes;
  // The drafter's weights requantized (draft-weights=int8 / int4, where this CPU has the kernels and the spec does
  // not say which): half / 0.28 of bf16's bytes, so a cheaper forward and fewer of the target's lines pushed out of
  // the shared L3, for drafts that differ a little. On the shipped family (80 held-out prompts, the forms alternated
  // in one race, gamma 8 cut at 0.4) as loaded / int8 / int4 ran 1.25 / 1.36 / 1.42x and 1.25 / 1.42 / 1.46x
  // (bench/results/cpu_int4_drafter_2026-11-29/). Tried on the chains cut by confidence, the sizes that win on a CPU,
  // to keep the calibration short.
  add_weight_forms(sizes, spec, "draft-weights", {cpu::WeightForm::Int8, cpu::WeightForm::Int4},
                   [](const auto& c) { return c.at("confidence-threshold") != "0"; });
  if (spec.draft_alternatives.empty()) return sizes;
  std::vector<std::string> drafters = {spec.draft_path};
  for (const auto& a : spec.draft_alternatives)
    if (std::find(drafters.begin(), drafters.end(), a) == drafters.end()) drafters.push_back(a);
  std::vector<std::map<std::string, std::string>> out;
  for (const auto& d : drafters)
    for (auto c : sizes) {
      c["draft"] = d;
      out.push_back(std::move(c));
    }
  return out;
}

void apply_tree_options(MethodSpec& spec, const std::map<std::string, std::string>& options) {
  for (const auto& [k, v] : options) {
    if (k == "draft") {
      spec.draft_path = v;
      spec.draft_alternatives.clear();
    } else {
      spec.options[k] = v;
    }
  }
}

std::string tree_options_text(const std::map<std::string, std::string>& o) {
  std::string s;
  for (const auto& [k, v] : o) s += (s.empty() ? "" : ",") + k + "=" + (k == "draft" ? fs::path(v).filename().string() : v);
  return s;
}

std::vector<std::map<std::string, std::string>> medusa_tree_candidates(
    const MethodSpec& spec, std::vector<std::map<std::string, std::string>> sparse) {
  // Each Medusa head has its own LM head: the shipped five (384 x 4096 each, with their blocks) weigh 60% of the
  // base, and the two a small tree reads took 0.26 ms of a 1.36 ms step as loaded, 0.15 ms on int4. On the 80
  // held-out prompts, in one race, tree=auto on each: 0.83x vanilla as loaded, 0.96x on int4
  // (bench/results/cpu_heldout_2026-12-01b/). The heads only propose; the target checks.
  add_weight_forms(sparse, spec, "head-weights", {cpu::WeightForm::Int4}, [](const auto& c) {
    const auto t = c.find("tree-choices");
    if (t == c.end()) return false;
    const std::string name = fs::path(t->second).stem().string();  // sparse_N
    return name.rfind("sparse_", 0) == 0 && std::atoi(name.c_str() + 7) <= 16;
  });
  return sparse;
}

namespace {

// A candidate that names a tree_choices file: `choices` (JSON) written to dir/NAME.json.
std::map<std::string, std::string> tree_choices_option(const fs::path& dir, const std::string& name,
                                                       const std::string& choices) {
  const fs::path file = dir / (name + ".json");
  if (!write_cache_file(file, choices + "\n")) throw InputError(file.string(), "cannot write");
  return {{"tree-choices", file.string()}};
}

// Medusa trees of 4 to 64 nodes built from the heads' top-10 accuracies on the calibration prompts (medusa_tree.h),
// each written as a tree_choices file under `dir`.
std::vector<std::map<std::string, std::string>> medusa_candidates(const Model& target, const std::string& head_dir,
                                                                  const std::vector<std::vector<int32_t>>& prompts,
                                                                  const fs::path& dir) {
  const auto acc = medusa_head_accuracies(target, head_dir, prompts);
  std::vector<std::map<std::string, std::string>> out;
  for (int n : {4, 8, 16, 32, 64}) {
    const auto tree = medusa_sparse_tree(acc, n);
    if (tree.empty() || (!out.empty() && int(tree.size()) < n)) break;  // no larger tree to be had
    out.push_back(tree_choices_option(dir, "sparse_" + std::to_string(n), nlohmann::json(tree).dump()));
    spdlog::info("tree auto medusa: {} nodes, {:.2f} accepted drafts expected per step", tree.size(),
                 medusa_expected_accepts(acc, tree));
  }
  return out;
}

// EAGLE-1's static trees from a chain of 2 to a 7-node tree with second choices near the root, each written as a
// tree_choices file under `dir`, and the published tree (no option: the method's default). The published tree is
// sized for a GPU, where verifying 25 tokens costs about what one does; on a CPU each row costs, and a chain of the
// head's first choices is often worth more.
std::vector<std::map<std::string, std::string>> eagle1_candidates(const fs::path& dir) {
  const std::vector<std::pair<std::string, std::string>> trees = {
      {"chain_2", "[[0], [0, 0]]"},
      {"chain_3", "[[0], [0, 0], [0, 0, 0]]"},
      {"chain_4", "[[0], [0, 0], [0, 0, 0], [0, 0, 0, 0]]"},
      {"chain_5", "[[0], [0, 0], [0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0, 0]]"},
      {"fork_5", "[[0], [1], [0, 0], [0, 0, 0], [0, 0, 0, 0]]"},
      {"fork_7", "[[0], [1], [0, 0], [0, 1], [0, 0, 0], [0, 0, 1], [0, 0, 0, 0]]"},
  };
  std::vector<std::map<std::string, std::string>> out;
  for (const auto& [name, choices] : trees) out.push_back(tree_choices_option(dir, name, choices));
  out.push_back({});  // the published tree
  return out;
}

// What a calibration measures of one method, summed over its prompts: decoding steps, tokens, tokens verified, and
// the time of drafting and of verification (the target's forward, verification and the KV update) as they ran.
struct CalibrationSums {
  long steps = 0, tokens = 0, verified = 0;
  double draft_ms = 0, verify_ms = 0;

  // `method` on one prompt (greedy, opts.max_tokens).
  void run(const Model& target, Method& method, Backend b, const std::vector<int32_t>& ids, const GenerateOptions& opts) {
    auto ctx = new_context(target, b, 0);
    const auto res = generate_speculative(target, *ctx, method, ids, opts);
    for (const auto& st : res.steps) {
      if (st.root_token < 0) continue;
      ++steps;
      tokens += st.accepted_count() + 1;
      verified += st.target_tokens;
      draft_ms += st.timings.draft_us * 1e-3;
      verify_ms += (st.timings.total_us() - st.timings.draft_us) * 1e-3;
    }
  }
  // Per decoding step: tau, tokens verified, drafting and verification ms. Vanilla's time per token is its verify_ms.
  TreeTrial trial() const {
    TreeTrial t;
    t.tau = steps ? double(tokens) / steps : 1;
    t.verify_tokens = steps ? double(verified) / steps : 1;
    t.draft_ms = steps ? draft_ms / steps : 0;
    t.verify_ms = steps ? verify_ms / steps : 0;
    return t;
  }
};

}  // namespace

std::vector<CalibrationWindow> calibration_windows(const std::vector<int>& answer_lengths, size_t count,
                                                   int new_tokens) {
  long total = 0;
  for (int n : answer_lengths) total += std::max(n, 0);
  std::vector<CalibrationWindow> out;
  if (total == 0) {  // nothing to spread over: each prompt's start
    for (size_t i = 0; i < answer_lengths.size() && i < count; ++i) out.push_back({i, 0});
    return out;
  }
  size_t i = 0;
  long answer_start = 0;  // where answer i starts in the answers laid end to end
  for (size_t k = 0; k < count; ++k) {
    const long centre = long((double(k) + 0.5) * double(total) / double(count));
    while (centre >= answer_start + std::max(answer_lengths[i], 0)) answer_start += std::max(answer_lengths[i++], 0);
    const long length = answer_lengths[i];
    const long offset = std::clamp(centre - answer_start - new_tokens / 2, 0L, std::max(length - new_tokens, 0L));
    out.push_back({i, int(offset)});
  }
  return out;
}

std::vector<int32_t> calibration_window_prompt(const std::vector<int32_t>& prompt, const std::vector<int32_t>& answer,
                                               int offset, int new_tokens, int n_ctx) {
  long n = std::min<long>(offset, long(answer.size()));
  n = std::min(n, long(n_ctx) - long(prompt.size()) - new_tokens);  // the window fits the context
  n = std::max(n, 0L);
  std::vector<int32_t> out = prompt;
  out.insert(out.end(), answer.begin(), answer.begin() + n);
  return out;
}

nlohmann::json tree_trials_json(const TreeChoice& choice) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : choice.trials)
    out.push_back({{"options", t.options}, {"tau", t.tau}, {"verify_tokens", t.verify_tokens},
                   {"verify_ms", t.verify_ms}, {"curve_verify_ms", t.curve_verify_ms}, {"draft_ms", t.draft_ms},
                   {"tokens_per_second", t.tokens_per_second}});
  return out;
}

namespace {

// The tokens per second a trial's steps give: its tau over its step's verification and drafting time.
double trial_tokens_per_second(const TreeTrial& t) {
  const double step = t.verify_ms + t.draft_ms;
  return step > 0 ? 1000.0 * t.tau / step : 0;
}

}  // namespace

TreeChoice choose_tree(std::vector<TreeTrial> trials, const StepCost& cost, double vanilla_ms) {
  TreeChoice c;
  const double cost1 = vanilla_ms > 0 ? vanilla_ms : cost.at(1);
  const double vanilla_tps = 1000.0 / std::max(cost1, 1e-9);
  for (auto& t : trials) {
    t.curve_verify_ms = cost.at(int(std::lround(t.verify_tokens)));
    if (!(t.verify_ms > 0)) t.verify_ms = t.curve_verify_ms;
    t.tokens_per_second = trial_tokens_per_second(t);
  }
  const TreeTrial* best = nullptr;
  for (const auto& t : trials)
    if (!best || t.tokens_per_second > best->tokens_per_second) best = &t;
  c.trials = trials;
  if (!best) return c;
  c.options = best->options;
  c.expected_speedup = best->tokens_per_second / vanilla_tps;
  c.expected_tokens_per_second = best->tokens_per_second;
  c.vanilla_tokens_per_second = vanilla_tps;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s: tau %.2f per step for %.2f ms of verification (%.1f tokens) + %.2f ms of drafting, "
                                 "against %.2f ms per vanilla token: %.2fx expected",
                tree_options_text(best->options).c_str(), best->tau, best->verify_ms, best->verify_tokens, best->draft_ms,
                cost1, c.expected_speedup);
  c.summary = buf;
  if (c.expected_speedup < 1.0) {
    // Which term loses: the cost model's one sentence (cost_model.h).
    c.summary += "; " + losing_term(best->tau, best->verify_ms, best->draft_ms, cost1);
  }
  return c;
}

namespace {

// The trials this process calibrated, by their cache file's path (the key and the cache folder). A disturbed
// calibration is not written to the cache folder (it would stand forever), but calibrating again for every run of the
// same process put about a second of calibration before each of the app's chat answers on a busy machine (its
// streaming test: the first words after 1.1 s).
struct Remembered {
  std::vector<TreeTrial> trials;
  double vanilla_ms = 0;
  std::chrono::steady_clock::time_point when;
};
std::mutex g_remembered_mutex;
std::map<std::string, Remembered> g_remembered;

// A trial naming a tree file of the cache folder (Medusa's sparse trees) or a drafter that is gone: its choice cannot
// run.
bool tree_file_gone(const TreeTrial& t) {
  for (const char* key : {"tree-choices", "draft"})
    if (const auto f = t.options.find(key); f != t.options.end() && !fs::exists(f->second)) return true;
  return false;
}

}  // namespace

std::vector<std::unique_ptr<Method>> build_candidates(const MethodSpec& spec, const Model& target,
                                                      std::vector<std::map<std::string, std::string>>& candidates) {
  std::vector<std::unique_ptr<Method>> methods;
  for (size_t i = 0; i < candidates.size();) {
    MethodSpec s = spec;
    s.options.erase("tree");
    apply_tree_options(s, candidates[i]);
    try {
      methods.push_back(make_method(s, target));
      ++i;
    } catch (const InputError& e) {  // a size this model cannot run (more streams than it has): not a candidate
      if (candidates[i].empty()) throw;  // the method's own defaults must build
      spdlog::info("tree auto {} {}: skipped ({})", spec.name, tree_options_text(candidates[i]), e.what());
      candidates.erase(candidates.begin() + ptrdiff_t(i));
    }
  }
  return methods;
}

TreeChoice tune_tree(const Model& target, const MethodSpec& spec, Backend backend,
                     const std::vector<std::vector<int32_t>>& prompts, int new_tokens) {
  const Backend b = backend_for(target, backend);
  const StepCost cost = cached_step_cost(target, b);
  // The choice's cache key: what the calibration depends on.
  std::string fixed;
  for (const auto& [k, v] : spec.options)
    if (k != "tree") fixed += k + "=" + v + ";";
  for (const auto& a : spec.draft_alternatives) fixed += "alternative=" + a + ";";
  // And the sizes tried: a choice cached before a candidate was added would never try it.
  for (const auto& c : tree_candidates(spec)) fixed += "candidate=" + tree_options_text(c) + ";";
  // (Medusa's trees come from its heads' accuracies during the calibration; the weights they are tried on are known.)
  if (spec.name == "medusa")
    for (const auto& c : medusa_tree_candidates(spec, {{{"tree-choices", "sparse_4.json"}}}))
      fixed += "medusa=" + tree_options_text(c) + ";";
  // And where in the answers it reads: windows spread over answers this long (a choice calibrated at fixed offsets
  // is not reused).
  fixed += "windows=spread;answer=" + std::to_string(kCalibrationAnswerTokens) + ";";
  const auto& id = target.identity();
  // The drafter's and the target's files as stamped now: a head retrained in place is calibrated again.
  const std::string files = files_stamp(id.path) + "|" + files_stamp(spec.draft_path) + "|" + files_stamp(spec.head_path);
  const std::string key = sha256_hex(id.config_sha256 + "|" + id.weights_index_sha256 + "|" + spec.name + "|" +
                                     spec.draft_path + "|" + spec.head_path + "|" + fixed + "|" +
                                     compute_identity(target, b) + "|" + files);
  const fs::path file = fs::path(cache_dir()) / "tree_choice" / (key.substr(0, 24) + ".json");
  std::vector<TreeTrial> trials;
  double vanilla_ms = 0;
  std::string source = "remembered";
  {
    std::lock_guard lock(g_remembered_mutex);
    if (auto it = g_remembered.find(file.string());
        it != g_remembered.end() && std::chrono::steady_clock::now() - it->second.when < kRememberCalibration) {
      trials = it->second.trials;
      vanilla_ms = it->second.vanilla_ms;
    }
  }
  if (std::any_of(trials.begin(), trials.end(), tree_file_gone)) trials.clear();  // calibrate again
  std::ifstream in;  // the cache folder's choice, read only when this process has none
  if (trials.empty()) {
    source = "cached";
    in.open(file);
  }
  if (in.is_open()) {
    try {
      nlohmann::json j;
      in >> j;
      vanilla_ms = j.at("vanilla_ms").get<double>();
      for (const auto& t : j.at("trials")) {
        TreeTrial x;
        x.options = t.at("options").get<std::map<std::string, std::string>>();
        x.tau = t.at("tau").get<double>();
        x.verify_tokens = t.at("verify_tokens").get<double>();
        x.draft_ms = t.at("draft_ms").get<double>();
        x.verify_ms = t.at("verify_ms").get<double>();  // a cache from before verification was timed: calibrate again
        if (tree_file_gone(x)) throw std::runtime_error("missing tree file");  // calibrate again
        trials.push_back(std::move(x));
      }
    } catch (const std::exception&) {
      trials.clear();
    }
    // A choice cached from a disturbed calibration (before such choices stopped being cached, or judged against a
    // curve measured again since) would stand forever: calibrate again.
    if (!trials.empty() && calibration_disturbed(vanilla_ms, cost)) {
      spdlog::info("tree auto {}: the cached choice was calibrated with vanilla at {:.3f} ms a token against the "
                   "curve's {:.3f}, on a busy machine: calibrating again",
                   spec.name, vanilla_ms, cost.at(1));
      trials.clear();
    }
  }
  if (trials.empty()) {
    source = "calibrated";
    GenerateOptions opts;
    opts.max_tokens = new_tokens;
    auto candidates = tree_candidates(spec);
    if (spec.name == "medusa") {  // sparse trees from the heads' measured accuracies, written next to the choice
      const fs::path dir = fs::path(cache_dir()) / "medusa_tree" / key.substr(0, 24);
      candidates = medusa_tree_candidates(spec, medusa_candidates(target, spec.head_path, prompts, dir));
    }
    if (spec.name == "eagle1") {
      candidates = eagle1_candidates(fs::path(cache_dir()) / "eagle1_tree");
      // The chains (the sizes that win on a CPU) also with an int4 head, as EAGLE-2/3's small trees.
      add_weight_forms(candidates, spec, "head-weights", {cpu::WeightForm::Int4}, [](const auto& c) {
        const auto t = c.find("tree-choices");
        return t != c.end() && fs::path(t->second).filename().string().rfind("chain_", 0) == 0;
      });
    }
    // Vanilla and every candidate in rounds, each round running them all once, and the median of each one's
    // times over the rounds: drift on the machine (another process, the host, the CPU's clock) then lands on
    // all of them alike instead of on whichever ran during it (one pass measured vanilla at 0.28-0.65 ms a token in
    // four lanes' calibrations of the same run). One untimed vanilla pass first takes the process's first-touch
    // page faults. Tau and the tokens verified are the same every round (greedy); only the times vary. Fewer
    // rounds when one takes long (a large model on this CPU), where a step's milliseconds dwarf the drift.
    // Each candidate's method is built once (an SpS candidate loads its drafter) and runs every round.
    auto methods = build_candidates(spec, target, candidates);
    const auto vanilla = make_method(MethodSpec{}, target);
    // Vanilla's answers (the untimed pass) place the calibration windows in them (calibration_windows).
    std::vector<std::vector<int32_t>> answers;
    std::vector<int> answer_lengths;
    GenerateOptions answer_opts = opts;
    answer_opts.max_tokens = kCalibrationAnswerTokens;
    int n_ctx = 0;
    for (const auto& prompt : prompts) {
      auto ctx = new_context(target, b, 0);
      n_ctx = ctx->n_ctx();
      answers.push_back(generate_speculative(target, *ctx, *vanilla, prompt, answer_opts).gen.tokens);
      answer_lengths.push_back(int(answers.back().size()));
    }
    std::vector<std::vector<int32_t>> windows;
    for (const auto& w : calibration_windows(answer_lengths, prompts.size(), new_tokens))
      windows.push_back(calibration_window_prompt(prompts[w.prompt], answers[w.prompt], w.offset, new_tokens, n_ctx));
    std::vector<std::vector<TreeTrial>> rounds(methods.size());
    std::vector<double> vanilla_rounds;
    std::vector<uint8_t> racing(methods.size(), 1);  // the candidates the later rounds still time
    const auto t0 = std::chrono::steady_clock::now();
    for (int round = 0; round < kCalibrationRounds; ++round) {
      // Prompt by prompt, vanilla and then every candidate on it, as an interleaved race runs its lanes: a drift of
      // the machine within the round lands on all of them alike (calibrated candidate after candidate, the round's
      // last ones met another spell than vanilla did).
      CalibrationSums v;
      std::vector<CalibrationSums> c(methods.size());
      for (const auto& ids : windows) {
        v.run(target, *vanilla, b, ids, opts);
        for (size_t i = 0; i < methods.size(); ++i)
          if (racing[i]) c[i].run(target, *methods[i], b, ids, opts);
      }
      vanilla_rounds.push_back(v.trial().verify_ms);
      for (size_t i = 0; i < methods.size(); ++i)
        if (racing[i]) rounds[i].push_back(c[i].trial());
      if (round > 0) continue;
      // After the first round only the candidates within kStillRacing of its best are timed again: the others are
      // out of the choice by more than one round's drift, and the rounds after it cost their share.
      std::vector<double> tps(methods.size());
      for (size_t i = 0; i < methods.size(); ++i) tps[i] = trial_tokens_per_second(rounds[i].front());
      const double best = tps.empty() ? 0 : *std::max_element(tps.begin(), tps.end());
      size_t still = 0;
      for (size_t i = 0; i < methods.size(); ++i) still += racing[i] = tps[i] >= kStillRacing * best;
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double each_next = took * double(still + 1) / double(methods.size() + 1);  // (+1: vanilla)
      if (v.trial().verify_ms >= kLargeStepMs || each_next * (kCalibrationRounds - 1) > kCalibrationBudgetSeconds) break;
    }
    vanilla_ms = median(vanilla_rounds);
    spdlog::info("tree auto {}: vanilla {:.3f} ms per token ({} rounds)", spec.name, vanilla_ms, vanilla_rounds.size());
    for (size_t i = 0; i < methods.size(); ++i) {
      TreeTrial t = rounds[i].front();
      std::vector<double> verify, draft;
      for (const auto& r : rounds[i]) {
        verify.push_back(r.verify_ms);
        draft.push_back(r.draft_ms);
      }
      t.verify_ms = median(verify);
      t.draft_ms = median(draft);
      t.options = candidates[i];
      trials.push_back(t);
      spdlog::info("tree auto {} {}: tau {:.2f}, {:.1f} tokens verified in {:.3f} ms, {:.3f} ms drafting per step",
                   spec.name, tree_options_text(candidates[i]), t.tau, t.verify_tokens, t.verify_ms, t.draft_ms);
    }
    nlohmann::json j = {{"model", id.path}, {"method", spec.name}, {"vanilla_ms", vanilla_ms}, {"trials", nlohmann::json::array()}};
    for (const auto& t : trials)
      j["trials"].push_back({{"options", t.options}, {"tau", t.tau}, {"verify_tokens", t.verify_tokens},
                             {"draft_ms", t.draft_ms}, {"verify_ms", t.verify_ms}});
    if (calibration_disturbed(vanilla_ms, cost)) {
      spdlog::warn("tree auto {}: vanilla calibrated at {:.3f} ms a token against the curve's {:.3f}: the machine was "
                   "busy; this choice is not cached",
                   spec.name, vanilla_ms, cost.at(1));
    } else {
      write_cache_file(file, j.dump(2) + "\n");  // not cached when it cannot be written: chosen again next time
    }
    std::lock_guard lock(g_remembered_mutex);
    g_remembered[file.string()] = {trials, vanilla_ms, std::chrono::steady_clock::now()};
  }
  TreeChoice choice = choose_tree(std::move(trials), cost, vanilla_ms);
  choice.source = source;
  return choice;
}

bool calibration_disturbed(double vanilla_ms, const StepCost& cost) {
  const double one = cost.at(1);
  return one > 0 && vanilla_ms > kDisturbedCalibration * one;
}

}  // namespace specscope::runs
