// specscope-cli bench: prefill and decode speed, and the cost of one forward with n new tokens (the curve
// speculative decoding lives on). Medians of --repeat runs; --json for machines, --out to save it; --contention
// measures everything again beside a busy process and reports both; --beside DRAFTER measures the target's steps
// taking turns with a drafter's forwards, as a speculative step does (runs/model_turns.h).
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <optional>
#include <thread>

#include <signal.h>
#include <sys/wait.h>

#include "engine/util/median.h"
#include "app/cli/commands.h"
#include "app/cli/memory_check.h"
#include "engine/cpu/thread_pool.h"
#include "engine/model/backend.h"
#include "engine/model/model.h"
#include "engine/model/resident_weights.h"
#include "engine/sampling/sampler.h"
#include "engine/util/error.h"
#include "runs/step_cost.h"
#include "runs/model_turns.h"
#include "runs/step_profile.h"
#include "engine/cpu/roofline.h"

namespace specscope::cli {

static std::vector<int> parse_sizes(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v <= 0 || v > 4096) throw InputError("--step-sizes", "bad size '" + item + "'");
    out.push_back(int(v));
  }
  return out;
}

int bench_sessions(Args& args);  // cmd_bench_sessions.cpp

namespace {

using bench_clock = std::chrono::steady_clock;

struct Figures {
  std::vector<double> prefill_tps, decode_tps;
  std::map<int, std::vector<double>> step_ms;
  // Per run, the n-token step's median over the first size's, both timed within the same few milliseconds. This
  // VM's speed changes by 2-3x from one spell of seconds to the next, so a ratio of medians taken over a whole
  // bench mixes spells (six benches of one build read the 8-token step at 1.34-2.89x); a ratio within each run
  // does not, and its median over runs is the step curve's shape.
  std::map<int, std::vector<double>> step_ratio;
};

// Size n's ratio within each run (Figures::step_ratio): its median over the runs, and its range.
struct PairedRatio {
  double median, lo, hi;
};
PairedRatio paired_ratio(const Figures& f, int n) {
  const auto& r = f.step_ratio.at(n);
  return {median(r), *std::min_element(r.begin(), r.end()), *std::max_element(r.begin(), r.end())};
}

// Prefill, the n-token step costs and decode, `repeat` times.
Figures measure(Context& ctx, const std::vector<int32_t>& prompt, const std::vector<int>& sizes, int gen_tokens,
                int repeat, int V, const char* label) {
  using clock = bench_clock;
  const int prompt_tokens = int(prompt.size());
  Figures f;
  auto& prefill_tps = f.prefill_tps;
  auto& decode_tps = f.decode_tps;
  auto& step_ms = f.step_ms;
  ForwardOutput out;
  for (int r = 0; r < repeat; ++r) {
    std::fprintf(stderr, isatty(2) ? "\r[bench] %s run %d/%d" : "[bench] %s run %d/%d\n", label, r + 1, repeat);
    ctx.truncate(0);
    Batch b = Batch::causal(prompt);
    b.logit_rows = {prompt_tokens - 1};
    auto t0 = clock::now();
    ctx.forward(b, out);
    auto t1 = clock::now();
    prefill_tps.push_back(prompt_tokens / std::chrono::duration<double>(t1 - t0).count());
    // The n-token step cost at this context length (runs/step_cost.h: 3 timed forwards per size and repeat).
    std::map<int, double> run_ms;
    for (int n : sizes) {
      const auto ms = runs::time_steps(ctx, prompt, n, prompt_tokens, 3);
      step_ms[n].insert(step_ms[n].end(), ms.begin(), ms.end());
      run_ms[n] = median(ms);
    }
    for (int n : sizes) f.step_ratio[n].push_back(run_ms[n] / run_ms[sizes.front()]);
    decode_tps.push_back(runs::decode_tokens_per_second(ctx, argmax(out.row_logits(0), V), gen_tokens));
  }
  if (isatty(2)) std::fprintf(stderr, "\r");
  return f;
}

nlohmann::json figures_json(const Figures& f, const std::vector<int>& sizes) {
  nlohmann::json j = {{"prefill_tokens_per_second", median(f.prefill_tps)},
                      {"decode_tokens_per_second", median(f.decode_tps)}};
  const double one = median(f.step_ms.at(sizes.front()));
  nlohmann::json steps = nlohmann::json::array();
  for (int n : sizes) {
    const PairedRatio p = paired_ratio(f, n);
    steps.push_back({{"tokens", n}, {"ms", median(f.step_ms.at(n))}, {"relative_to_first", median(f.step_ms.at(n)) / one},
                     {"paired_ratio", p.median}, {"paired_ratio_range", {p.lo, p.hi}}});
  }
  j["step_cost"] = steps;
  return j;
}

// A competing busy process (what a desktop always has: a browser, a build), for --contention: a child that
// spins until it is killed.
class BusyProcess {
 public:
  BusyProcess() {
    pid_ = fork();
    if (pid_ == 0) {
      volatile uint64_t x = 0;
      for (;;) x = x + 1;
    }
  }
  ~BusyProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

 private:
  pid_t pid_ = -1;
};

nlohmann::json roofline_json(const cpu::Roofline& r) {
  nlohmann::json peaks = nlohmann::json::array();
  for (const auto& p : r.peaks) peaks.push_back({{"path", p.path}, {"gmacs_per_second", p.macs_per_second / 1e9}});
  return {{"working_set_bytes", r.working_set_bytes}, {"read_gb_per_second", r.read_bytes_per_second / 1e9},
          {"peaks", peaks}};
}

// The median one-token step of a run's figures (0 when 1 is not among the step sizes).
double one_token_step_ms(const Figures& f, const std::vector<int>& sizes) {
  return std::find(sizes.begin(), sizes.end(), 1) != sizes.end() ? median(f.step_ms.at(1)) : 0;
}

// The shortest an n-token step can be here (its bound) as a multiple of the one-token step measured in the same
// run: the ratio no kernel can beat, so a goal like "an 8-token step within 1.4x of one token" is judged against
// what the machine allows at that moment (its memory's speed moves the one-token step; the bound of a many-token
// step is mostly arithmetic). 0 when the run has no one-token step.
double floor_ratio(const runs::StepProfile& p, double one_token_ms) {
  return one_token_ms > 0 ? p.bound_ms / one_token_ms : 0;
}

nlohmann::json profile_json(const std::vector<runs::StepProfile>& profile, double one_token_ms) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : profile) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& o : p.ops)
      ops.push_back({{"op", o.op}, {"ms", o.ms}, {"gmacs", o.macs / 1e9}, {"weight_mb", o.weight_bytes / 1e6},
                     {"bound_ms", o.bound_ms}, {"bound_by", o.bound_by},
                     {"fraction_of_bound", o.bound_ms > 0 && o.ms > 0 ? o.bound_ms / o.ms : 0}});
    out.push_back({{"tokens", p.tokens}, {"ms", p.ms}, {"bound_ms", p.bound_ms},
                   {"fraction_of_bound", p.ms > 0 ? p.bound_ms / p.ms : 0}, {"ops", ops}, {"forks", p.forks},
                   {"join_wait_ms", p.join_wait_ms}, {"bound_vs_one_token_step", floor_ratio(p, one_token_ms)},
                   {"experts_per_layer", p.experts_per_layer}});
  }
  return out;
}

// The roofline and, per profiled step size, each operation's time beside the time its bound allows.
void print_profile(const cpu::Roofline& r, const std::vector<runs::StepProfile>& profile, const std::string& path,
                   double one_token_ms) {
  std::printf("roofline (%d threads): read %.1f GB/s over %.1f MB", cpu::team_size(), r.read_bytes_per_second / 1e9,
              double(r.working_set_bytes) / 1e6);
  for (const auto& p : r.peaks) std::printf("; %s %.1f GMAC/s", p.path.c_str(), p.macs_per_second / 1e9);
  std::printf("\nstep profile (matrix products on the %s path; bound = max(bytes / bandwidth, MACs / peak)):\n",
              path.c_str());
  for (const auto& p : profile) {
    std::printf("  n=%-3d %7.3f ms, bound %.3f ms (%.0f%% of the roofline); %.0f forks, %.3f ms waiting at their joins\n",
                p.tokens, p.ms, p.bound_ms, p.ms > 0 ? 100.0 * p.bound_ms / p.ms : 0.0, p.forks, p.join_wait_ms);
    if (p.experts_per_layer > 0)
      std::printf("      each expert layer computed %.1f experts (their weights are in the matrix products' bytes)\n",
                  p.experts_per_layer);
    for (const auto& o : p.ops) {
      std::printf("      %-12s %7.3f ms %5.1f%%", o.op.c_str(), o.ms, p.ms > 0 ? 100.0 * o.ms / p.ms : 0.0);
      if (o.bound_ms > 0) std::printf("   bound %.3f ms (%s), at %.0f%% of it", o.bound_ms, o.bound_by.c_str(), 100.0 * o.bound_ms / o.ms);
      std::printf("\n");
    }
  }
  for (const auto& p : profile)
    if (p.tokens > 1 && one_token_ms > 0)
      std::printf("  no %d-token step can be shorter than its bound, %.3f ms: %.2fx this run's one-token step "
                  "(%.3f ms)\n", p.tokens, p.bound_ms, floor_ratio(p, one_token_ms), one_token_ms);
}

}  // namespace


int cmd_bench(Args& args) {
  const std::string suite = args.get_or("--suite", "model");
  if (suite == "sessions") return bench_sessions(args);
  if (suite != "model") throw InputError("--suite", "expected model or sessions, got '" + suite + "'");
  std::string path = model_path(args);
  int prompt_tokens = args.get_int("--prompt-tokens", 128);
  int gen_tokens = args.get_int("--gen-tokens", 64);
  int repeat = args.get_int("--repeat", 5);
  auto sizes = parse_sizes(args.get_or("--step-sizes", "1,2,4,8,16,32,64"));
  const auto profile_sizes = parse_sizes(args.get_or("--profile-sizes", "1,8"));
  bool json = args.has("--json");
  auto out_file = args.get("--out");
  const Backend backend = parse_backend(args.get_or("--backend", "auto"));
  const bool contention = args.has("--contention");
  const auto beside_path = args.get("--beside");
  const int beside_forwards = args.get_int("--beside-forwards", 3);
  const std::string weights = args.get_or("--weights", "as-loaded");
  const std::string beside_weights = args.get_or("--beside-weights", "as-loaded");
  args.finish();
  const auto form = cpu::parse_weight_form(weights), beside_form = cpu::parse_weight_form(beside_weights);
  if (!form) throw InputError("--weights", "expected as-loaded, int8 or int4, got '" + weights + "'");
  if (!beside_form) throw InputError("--beside-weights", "expected as-loaded, int8 or int4, got '" + beside_weights + "'");
  // A context with the weights in the form asked for: requantized forms are CPU kernels (a drafter's), so a form
  // other than as-loaded takes the CPU backend.
  auto make_context = [&](const Model& m, cpu::WeightForm f) {
    return f != cpu::WeightForm::AsLoaded ? m.new_cpu_context(0, f) : new_context(m, backend, 0);
  };
  if (beside_forwards < 1 || beside_forwards > 64) throw InputError("--beside-forwards", "expected 1 to 64");
  if (prompt_tokens < 1 || gen_tokens < 1 || repeat < 1)
    throw InputError("bench", "--prompt-tokens, --gen-tokens and --repeat must be >= 1");

  check_model_memory(path, 0, backend);  // before it loads: refuse what will not fit
  auto model = Model::load(path);
  const int V = model->config().vocab_size;
  auto ctx = make_context(*model, *form);
  int max_step = *std::max_element(sizes.begin(), sizes.end());
  if (prompt_tokens + std::max(gen_tokens, max_step) > ctx->n_ctx())
    throw InputError("--prompt-tokens", "prompt + generated tokens exceed the model's context");
  const std::vector<int32_t> prompt = runs::benchmark_tokens(V, prompt_tokens);
  std::shared_ptr<const Model> other;  // --beside's model, loaded first so that bad input fails before any measuring
  if (beside_path) {
    check_model_memory(*beside_path, 0, backend);
    other = Model::load(*beside_path);
  }

  const Figures quiet = measure(*ctx, prompt, sizes, gen_tokens, repeat, V, "quiet");
  // Where the verification-sized steps spend their time, against this machine's roofline (CPU only).
  std::optional<cpu::Roofline> roof;
  std::vector<runs::StepProfile> profile;
  if (ctx->backend_name() == "cpu") {
    std::fprintf(stderr, "[bench] roofline and step profile\n");
    roof = cpu::measure_roofline(runs::forward_weight_bytes(*model));
    profile = runs::profile_steps(*model, *roof, profile_sizes, prompt_tokens, repeat, *form);
  }
  std::optional<Figures> busy;
  if (contention) {
    BusyProcess competitor;
    busy = measure(*ctx, prompt, sizes, gen_tokens, repeat, V, "beside a busy process");
  }
  std::optional<runs::ModelTurns> turns;
  if (other) {
    std::fprintf(stderr, "[bench] taking turns with %s\n", beside_path->c_str());
    auto other_ctx = make_context(*other, *beside_form);
    const auto other_prompt = runs::benchmark_tokens(other->config().vocab_size, prompt_tokens);
    ForwardOutput out;
    ctx->truncate(0);
    ctx->forward(Batch::causal(prompt), out);
    other_ctx->forward(Batch::causal(other_prompt), out);
    turns = runs::measure_model_turns(*ctx, prompt, prompt_tokens, *other_ctx, other_prompt, prompt_tokens,
                                      {1, 2, 4, 8}, beside_forwards, 40 * repeat);
  }
  // Where the CPU read the weights from (asked only of CPU contexts, which made the copy already if there is one).
  const std::string weights_memory =
      ctx->backend_name() != "cpu"            ? "device"
      : *form != cpu::WeightForm::AsLoaded    ? "requantized copy"
      : model->resident_weights()             ? "huge-page copy"
      : resident_copy_bytes(model->weights()) == 0 ? "repacked panels"
                                              : "file mapping";
  nlohmann::json j = {{"model", path},
                      {"parameters", model->parameter_count()},
                      {"weights_dtype", model->weights_dtype()},
                      {"weights", weights},
                      {"weights_memory", weights_memory},
                      {"backend", ctx->backend_name()},
                      {"device", backend_description(resolve_backend(backend))},
                      {"threads", cpu::team_size()},
                      {"prompt_tokens", prompt_tokens},
                      {"gen_tokens", gen_tokens},
                      {"repeat", repeat}};
  j.update(figures_json(quiet, sizes));
  // Achieved bandwidth: the bytes of weights one decoding step reads (every matrix once) over the step's time,
  // the figure a GPU's batch-1 decode is judged by against its memory's peak.
  const double weight_bytes = double(runs::forward_weight_bytes(*model));
  j["weight_bytes_per_step"] = weight_bytes;
  j["decode_bandwidth_gb_per_s"] = weight_bytes * median(quiet.decode_tps) / 1e9;
  const double one_token_ms = one_token_step_ms(quiet, sizes);  // the profile's floors are multiples of it
  if (roof) {
    j["roofline"] = roofline_json(*roof);
    j["step_profile"] = profile_json(profile, one_token_ms);
  }
  if (turns) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& t : turns->steps)
      steps.push_back({{"tokens", t.tokens}, {"alone_ms", t.alone_ms}, {"in_turns_ms", t.in_turns_ms},
                       {"other_in_turns_ms", t.other_in_turns_ms}, {"other_by_position_ms", t.other_by_position_ms},
                       {"after_gap_ms", t.after_gap_ms}});
    j["beside"] = {{"model", *beside_path}, {"weights", beside_weights}, {"other_forwards_per_step", turns->other_forwards},
                   {"other_alone_ms", turns->other_alone_ms}, {"steps", steps}};
  }
  if (busy) {
    j["contended"] = figures_json(*busy, sizes);
    j["contended"]["competitor"] = "one busy process (a spinning child)";
    j["contended"]["decode_kept"] = median(busy->decode_tps) / median(quiet.decode_tps);
  }
  if (out_file) {
    std::ofstream f(*out_file);
    if (!f) throw InputError(*out_file, "cannot write");
    f << j.dump(2) << "\n";
  }
  if (json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model    %s (%.2fM parameters, %s%s%s, %s backend, weights from %s, %d threads)\n", path.c_str(),
              double(model->parameter_count()) / 1e6, model->weights_dtype().c_str(),
              *form == cpu::WeightForm::AsLoaded ? "" : " requantized to ", *form == cpu::WeightForm::AsLoaded ? "" : weights.c_str(),
              ctx->backend_name().c_str(), weights_memory.c_str(), cpu::team_size());
  auto print = [&](const char* label, const Figures& f) {
    std::printf("%s\n", label);
    std::printf("  prefill  %.1f tok/s (%d tokens, median of %d)\n", median(f.prefill_tps), prompt_tokens, repeat);
    std::printf("  decode   %.1f tok/s (%d tokens, median of %d)\n", median(f.decode_tps), gen_tokens, repeat);
    std::printf("  step cost with n new tokens (context %d; ratio of medians, then the median and range of the ratio "
                "within each run):\n", prompt_tokens);
    const double one = median(f.step_ms.at(sizes.front()));
    for (int n : sizes) {
      const PairedRatio p = paired_ratio(f, n);
      std::printf("    n=%-4d %8.3f ms  %5.2fx   paired %5.2fx (%.2f-%.2f)\n", n, median(f.step_ms.at(n)),
                  median(f.step_ms.at(n)) / one, p.median, p.lo, p.hi);
    }
  };
  print("quiet", quiet);
  if (roof) print_profile(*roof, profile, runs::linear_path(*model), one_token_ms);
  if (turns) {
    std::printf("taking turns with %s (weights %s; %d one-token forwards of it before each step), medians:\n",
                beside_path->c_str(), beside_weights.c_str(), turns->other_forwards);
    double extra = 0, extra_after_gap = 0;
    for (const auto& t : turns->steps) {
      std::printf("    n=%-4d %8.3f ms in turns, %.3f alone (%.2fx), %.3f after an idle gap as long (%.2fx); "
                  "its forwards %.3f ms, %.3f alone (%.2fx)\n",
                  t.tokens, t.in_turns_ms, t.alone_ms, t.in_turns_ms / t.alone_ms, t.after_gap_ms,
                  t.after_gap_ms / t.alone_ms, t.other_in_turns_ms, turns->other_alone_ms,
                  t.other_in_turns_ms / turns->other_alone_ms);
      std::printf("             its forwards by place in the round:");
      for (double p : t.other_by_position_ms) std::printf(" %.3f", p);
      std::printf(" ms\n");
      extra += t.in_turns_ms - t.alone_ms;
      extra_after_gap += t.after_gap_ms - t.alone_ms;
    }
    // Why the target is dearer in turns: the time away alone (a cache shared with other work loses what we leave
    // untouched) or the other model's own footprint (what the gap does not explain).
    if (extra > 0.05 * turns->steps.front().alone_ms * double(turns->steps.size()))
      std::printf("    of the target's extra time in turns, an idle gap as long accounts for %.0f%%; the rest is %s's own "
                  "use of the caches\n",
                  100.0 * std::clamp(extra_after_gap / extra, 0.0, 1.0), beside_path->c_str());
  }
  if (busy) {
    print("beside one busy process", *busy);
    std::printf("decode kept %.2f of its quiet speed\n", median(busy->decode_tps) / median(quiet.decode_tps));
  }
  return 0;
}

}  // namespace specscope::cli
