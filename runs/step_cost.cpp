#include "runs/step_cost.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "engine/cpu/matmul.h"
#include "engine/cpu/thread_pool.h"
#include "engine/sampling/sampler.h"
#include "engine/util/median.h"
#include "engine/util/sha256.h"
#include "runs/cache_file.h"

namespace specscope::runs {

namespace fs = std::filesystem;

double StepCost::at(int n) const {
  if (ms.empty()) return 0;
  if (n <= ms.front().first) return ms.front().second * n / std::max(1, ms.front().first);
  for (size_t i = 1; i < ms.size(); ++i)
    if (n <= ms[i].first) {
      const auto [n0, t0] = ms[i - 1];
      const auto [n1, t1] = ms[i];
      return t0 + (t1 - t0) * double(n - n0) / double(n1 - n0);
    }
  // Past the last point: the slope of the last segment.
  const auto [n0, t0] = ms[ms.size() >= 2 ? ms.size() - 2 : 0];
  const auto [n1, t1] = ms.back();
  const double slope = n1 > n0 ? (t1 - t0) / double(n1 - n0) : t1 / std::max(1, n1);
  return t1 + slope * double(n - n1);
}

std::vector<int32_t> benchmark_tokens(int vocab, int n) {
  std::vector<int32_t> t(size_t(std::max(n, 0)));
  for (int i = 0; i < n; ++i)
    t[size_t(i)] = int32_t(((1000003ll * (i + 1)) % std::max(vocab - 300, 1) + 256) % std::max(vocab, 1));
  return t;
}

void warm_up(Context& ctx, const Batch& b, int base) {
  // The CPU runs slower for a few milliseconds after heavy vector work (a 20 ms AVX-512 FMA burst leaves reads of a
  // cached buffer ~25% slower, recovering over ~5 ms: bench/clock_recovery.c), so a one-token forward timed right
  // after the 64-token ones read 30-40% dearer than a decode step (0.51 against 0.37 ms on the default base) when
  // one untimed forward was all the warm-up.
  using clock = std::chrono::steady_clock;
  ForwardOutput out;
  const auto w0 = clock::now();
  do {
    ctx.forward(b, out);
    ctx.truncate(base);
  } while (std::chrono::duration<double, std::milli>(clock::now() - w0).count() < kWarmMs);
}

std::vector<double> time_steps(Context& ctx, const std::vector<int32_t>& tokens, int n, int base, int timed) {
  using clock = std::chrono::steady_clock;
  Batch b;
  for (int i = 0; i < n; ++i) b.tokens.push_back(tokens[size_t(i) % tokens.size()]);
  // As greedy verification asks (speculative_generator.cpp's request_summaries): every row's summary, not rows x
  // vocab logits. The CPU returns its logits all the same; the CUDA backend then sends summaries instead of 33 MB
  // of Llama-3 logits at 64 rows (2 of an 18 ms 8B step on the H200, bench/results/gpu_h200_2026-12-04b).
  b.summaries_only = true;
  ForwardOutput out;
  warm_up(ctx, b, base);
  std::vector<double> ms;
  for (int r = 0; r < timed; ++r) {
    const auto t0 = clock::now();
    ctx.forward(b, out);
    ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    ctx.truncate(base);
  }
  return ms;
}

double decode_tokens_per_second(Context& ctx, int32_t first, int tokens) {
  ForwardOutput out;
  int32_t tok = first;
  const auto t0 = std::chrono::steady_clock::now();
  for (int g = 0; g < tokens; ++g) {
    Batch b;
    b.tokens = {tok};
    b.summaries_only = true;  // as greedy decoding asks (engine/generate/generator.cpp)
    ctx.forward(b, out);
    tok = out.row_argmax(0);
  }
  return tokens / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

namespace {
// Curves this process has already checked or measured, by cache file: the app asks after every job, and on a 1B
// model the check is a prefill and four forwards (~0.3 s, estimated). A file changed since (another process measured
// it again) is checked again.
std::mutex g_checked_mu;
std::map<std::string, std::vector<std::pair<int, double>>> g_checked;
bool checked_in_this_process(const std::string& file, const StepCost& c) {
  std::lock_guard lk(g_checked_mu);
  const auto it = g_checked.find(file);
  return it != g_checked.end() && it->second == c.ms;
}
void remember_checked(const std::string& file, const StepCost& c) {
  std::lock_guard lk(g_checked_mu);
  g_checked[file] = c.ms;
}

// The median of three warmed-up one-token forwards after a 16-token prompt: the check of a cached curve.
double one_token_ms_now(const Model& model, Backend backend) {
  auto ctx = new_context(model, backend, 0);
  const std::vector<int32_t> prompt = benchmark_tokens(model.config().vocab_size, 16);
  ForwardOutput out;
  ctx->forward(Batch::causal(prompt), out);
  return median(time_steps(*ctx, prompt, 1, int(prompt.size()), 3));
}
}  // namespace

StepCost measure_step_cost(const Model& model, Backend backend, int context, int repeat) {
  auto ctx = new_context(model, backend, 0);
  StepCost c;
  c.context = std::max(1, std::min(context, ctx->n_ctx() - 65));
  const std::vector<int32_t> prompt = benchmark_tokens(model.config().vocab_size, c.context);
  ForwardOutput out;
  ctx->forward(Batch::causal(prompt), out);
  // The sizes are measured round-robin (each round: one warmed-up forward of every size), not one size after
  // another: a busy spell of another process, or the thread team's back-off, then lands on every size alike instead
  // of inflating whichever size it overlapped (measured one after another on a busy machine, n = 1 came out dearer
  // than n = 2, which made every tree look cheaper than it is).
  const std::vector<int> sizes = {1, 2, 4, 8, 16, 32, 64};
  std::vector<std::vector<double>> samples(sizes.size());
  for (int r = 0; r < repeat; ++r)
    for (size_t i = 0; i < sizes.size(); ++i) samples[i].push_back(time_steps(*ctx, prompt, sizes[i], c.context, 1)[0]);
  for (size_t i = 0; i < sizes.size(); ++i) c.ms.emplace_back(sizes[i], median(samples[i]));
  // More tokens never cost less: a point measured while another process took the core is raised to the one
  // before it rather than letting a bigger tree look cheaper than a smaller one.
  for (size_t i = 1; i < c.ms.size(); ++i) c.ms[i].second = std::max(c.ms[i].second, c.ms[i - 1].second);
  return c;
}

std::string cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "specscope").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "specscope").string();
  return (fs::temp_directory_path() / "specscope-cache").string();
}

std::string compute_identity(const Model& model, Backend backend) {
  const Backend b = backend_for(model, backend);
  // "summaries": GPU curves timed before the steps asked for summaries (2026-12-04) are measured again.
  std::string path = "gpu summaries";
  if (b == Backend::Cpu && !model.weights().layers.empty())
    path = std::string(cpu::linear_roofline_path(model.weights().layers.front().wq.dtype)) + " " + cpu::kKernelRevision;
  return std::string(backend_name(b)) + "|" + backend_description(b) + "|" + std::to_string(cpu::team_size()) + "|" + path;
}

StepCost cached_step_cost(const Model& model, Backend backend, bool* measured) {
  const Backend b = backend_for(model, backend);
  const auto& id = model.identity();
  // "|warm8": curves measured before every size was warmed up for kWarmMs (2026-11-28) are measured again.
  const std::string key =
      sha256_hex(id.config_sha256 + "|" + id.weights_index_sha256 + "|" + compute_identity(model, b) + "|warm8");
  const fs::path file = fs::path(cache_dir()) / "step_cost" / (key.substr(0, 24) + ".json");
  if (measured) *measured = false;
  {
    std::ifstream in(file);
    nlohmann::json j;
    if (in && (in >> j, true)) try {
        StepCost c;
        c.context = j.at("context").get<int>();
        for (const auto& p : j.at("ms")) c.ms.emplace_back(p.at(0).get<int>(), p.at(1).get<double>());
        if (c.ms.size() >= 2) {
          if (checked_in_this_process(file.string(), c)) return c;
          const double now_ms = one_token_ms_now(model, b);
          if (!(now_ms * kDisturbedCalibration < c.at(1))) {
            remember_checked(file.string(), c);
            return c;
          }
          spdlog::info("{}: the cached step-cost curve's one-token step ({:.3f} ms) was measured on a busy machine "
                       "(a forward takes {:.3f} ms now): measuring again",
                       file.string(), c.at(1), now_ms);
        }
      } catch (const nlohmann::json::exception&) {
        spdlog::warn("{}: unreadable step-cost cache, measuring again", file.string());
      }
  }
  spdlog::info("measuring the step-cost curve of {} ({})", id.path, backend_description(b));
  StepCost c = measure_step_cost(model, b);
  if (measured) *measured = true;
  remember_checked(file.string(), c);
  nlohmann::json j = {{"model", id.path}, {"backend", backend_description(b)}, {"threads", cpu::team_size()},
                      {"context", c.context}, {"ms", nlohmann::json::array()}};
  for (const auto& [n, t] : c.ms) j["ms"].push_back({n, t});
  if (!write_cache_file(file, j.dump(2) + "\n")) spdlog::warn("{}: cannot write the step-cost cache", file.string());
  return c;
}

}  // namespace specscope::runs
