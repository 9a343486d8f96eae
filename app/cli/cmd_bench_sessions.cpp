// specscope-cli bench --suite sessions: the session store's bars, measured.
//  1. write throughput: 10,000 steps of 60-node trees (EAGLE-2's default tree size) recorded, nodes/s;
//  2. opening that 10,000-step session for replay (session, timeline, first step), and reading every step;
//  3. the cost of recording on decode tokens/s: the same generation with and without recording, alternated.
// Medians of --repeat runs; JSON with --json / --out.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/util/median.h"
#include "app/cli/commands.h"
#include "app/cli/method_flags.h"
#include "app/cli/recording.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/model.h"
#include "engine/util/cpu_info.h"
#include "engine/util/error.h"
#include "sessions/reader.h"
#include "sessions/writer.h"

namespace specscope::cli {

namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// A plausible EAGLE-2 step: 60 nodes in 6 levels, short token texts, every numeric field set.
StepRecord tree_step(int index, int nodes) {
  StepRecord r;
  r.step = index;
  r.method = "eagle2";
  r.position = 200 + index;
  r.root_token = 17 + index % 4000;
  for (int i = 0; i < nodes; ++i) {
    DraftNode n;
    n.id = i;
    n.parent = i < 10 ? -1 : (i - 10) / 5;
    n.depth = i < 10 ? 1 : 2 + (i - 10) / 10;
    n.token = (index * 31 + i * 7) % 4096;
    n.text = " tok" + std::to_string(n.token);
    n.draft_prob = 1.f / float(i + 2);
    n.cum_score = -0.1f * float(i);
    n.source = NodeSource::EagleHead;
    n.target_prob = 0.5f;
    n.accept_prob = i < 3 ? 1.f : 0.f;
    n.decision = i < 3 ? NodeDecision::Accepted : NodeDecision::NotReached;
    r.nodes.push_back(std::move(n));
  }
  r.accepted_path = {0, 1, 2};
  r.bonus_token = 99;
  r.bonus_text = " bonus";
  r.bonus_prob = 0.9f;
  r.committed = {1, 2, 3, 99};
  r.timings = {300, 900, 40, 20};
  r.target_forwards = 1;
  r.target_tokens = nodes + 1;
  r.draft_forwards = 6;
  r.draft_tokens = 60;
  return r;
}

}  // namespace

int bench_sessions(Args& args) {
  const int repeat = args.get_int("--repeat", 3);
  const int steps = args.get_int("--steps", 10000);
  const int nodes = args.get_int("--nodes", 60);
  const bool json = args.has("--json");
  auto out_file = args.get("--out");
  std::string path = model_path(args);
  const std::string prompt = args.get_or("--prompt", "What does the word harbor mean?");
  const MethodSpec spec = read_single_lane(args, args.get_or("--method", "sps"), path).method;
  const int max_tokens = args.get_int("--max-tokens", 128);
  args.finish();
  if (repeat < 1 || steps < 1 || nodes < 0) throw InputError("bench", "--repeat, --steps >= 1 and --nodes >= 0");

  const auto dir = std::filesystem::temp_directory_path() / ("specscope-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  nlohmann::json result = {{"suite", "sessions"}, {"cpu", cpu_model_name()}, {"steps", steps}, {"nodes_per_step", nodes},
                           {"repeat", repeat}};

  // 1 + 2: throughput, then open-for-replay on the store just written.
  std::vector<StepRecord> records;
  for (int i = 0; i < steps; ++i) records.push_back(tree_step(i, nodes));
  std::vector<double> nodes_per_s, open_ms, read_all_ms;
  for (int r = 0; r < repeat; ++r) {
    std::fprintf(stderr, "[bench sessions] write %d/%d\n", r + 1, repeat);
    const std::string db = (dir / ("w" + std::to_string(r) + ".db")).string();
    int64_t run = 0;
    {
      sessions::SessionWriter w(db);
      int64_t s = w.begin_session({});
      run = w.begin_run(s, {});
      auto t0 = clock_type::now();
      for (int i = 0; i < steps; ++i) w.append_step(run, records[size_t(i)], " piece");
      w.flush();
      nodes_per_s.push_back(double(steps) * nodes / seconds_since(t0));
      if (!w.error().empty()) throw InputError(db, w.error());
    }
    auto t0 = clock_type::now();
    sessions::SessionReader reader(db);
    auto session = reader.session(1);
    auto timeline = reader.timeline(run);
    auto first = reader.step(run, 0);
    open_ms.push_back(1e3 * seconds_since(t0));
    if (int(timeline.size()) != steps) throw std::runtime_error("bench: the timeline lost steps");
    t0 = clock_type::now();
    int64_t read = 0;
    reader.for_each_step(run, 0, steps, [&](sessions::RecordedStep&&) { ++read; });
    read_all_ms.push_back(1e3 * seconds_since(t0));
  }
  result["write_nodes_per_second"] = median(nodes_per_s);
  result["write_nodes_per_second_runs"] = nodes_per_s;
  result["open_for_replay_ms"] = median(open_ms);
  result["open_for_replay_ms_runs"] = open_ms;
  result["read_all_steps_ms"] = median(read_all_ms);

  // 3: decode with and without recording, alternated so drift hits both alike.
  auto model = Model::load(path);
  auto method = make_method(spec, *model);
  auto ids = encode_prompt(*model, prompt, true);
  GenerateOptions opts;
  opts.max_tokens = max_tokens;
  opts.stop_at_eos = false;  // the same number of tokens every time
  std::vector<double> tps_plain, tps_recorded;
  int64_t recorded_nodes = 0, recorded_steps = 0;
  for (int r = 0; r < 2 * repeat + 2; ++r) {
    const bool record = r % 2 == 1;
    std::fprintf(stderr, "[bench sessions] decode %d/%d (%s)\n", r + 1, 2 * repeat + 2, record ? "recorded" : "plain");
    std::unique_ptr<sessions::SessionWriter> w;
    int64_t run = 0;
    if (record) {
      w = std::make_unique<sessions::SessionWriter>((dir / "decode.db").string());
      run = w->begin_run(w->begin_session({}), {});
    }
    StepCallback cb;
    if (record)
      cb = [&](const StepRecord& rec, const std::string& piece) {
        w->append_step(run, rec, piece);
        return true;
      };
    auto ctx = model->new_cpu_context(0);
    auto res = generate_speculative(*model, *ctx, *method, ids, opts, cb);
    if (w) {
      w->flush();
      recorded_steps = w->stats().steps_committed;
      recorded_nodes = w->stats().nodes_committed;
    }
    if (r >= 2) (record ? tps_recorded : tps_plain).push_back(res.summary.tokens_per_second);  // first pair: warm-up
  }
  const double plain = median(tps_plain), recorded = median(tps_recorded);
  result["decode"] = {{"model", path},
                      {"method", spec.name},
                      {"max_tokens", max_tokens},
                      {"steps_per_run", recorded_steps},
                      {"nodes_per_run", recorded_nodes},
                      {"tokens_per_second_plain", plain},
                      {"tokens_per_second_recorded", recorded},
                      {"plain_runs", tps_plain},
                      {"recorded_runs", tps_recorded},
                      {"recording_cost_percent", plain > 0 ? 100.0 * (plain - recorded) / plain : 0}};
  std::filesystem::remove_all(dir);

  const std::string text = result.dump(2);
  if (out_file) {
    std::ofstream f(*out_file);
    if (!f) throw InputError(*out_file, "cannot write");
    f << text << "\n";
  }
  if (json) {
    std::printf("%s\n", text.c_str());
  } else {
    std::printf("session store: %d steps x %d nodes\n", steps, nodes);
    std::printf("  write:            %.0f nodes/s (median of %d)\n", median(nodes_per_s), repeat);
    std::printf("  open for replay:  %.1f ms (session, timeline, first step)\n", median(open_ms));
    std::printf("  read every step:  %.1f ms\n", median(read_all_ms));
    std::printf("  decode (%s, %d tokens): %.1f tok/s plain, %.1f tok/s recorded: cost %.2f%%\n", spec.name.c_str(),
                max_tokens, plain, recorded, plain > 0 ? 100.0 * (plain - recorded) / plain : 0);
  }
  return 0;
}

}  // namespace specscope::cli
