// specscope-cli compare: a race. The same prompts through several lanes (a method with its drafter, options and
// target), each compared with its own target's vanilla reference for speedup and (greedy) output equality.
// Lanes come from --methods (the family manifest next to the target supplies drafters and own targets) and
// --lane 'METHOD[:key=value,...]'. Recorded as one session with a run per (prompt, lane or reference).
// A thin adapter over the run library (runs/).
#include <unistd.h>

#include <cstdio>

#include "app/cli/chat_input.h"
#include "app/cli/commands.h"
#include "app/cli/compare_report.h"
#include "app/cli/memory_check.h"
#include "app/cli/method_flags.h"
#include "app/cli/recording.h"
#include "app/cli/run_report.h"
#include "engine/util/error.h"
#include "runs/runner.h"

namespace specscope::cli {

namespace {

// Progress: rewritten in place on a terminal, one line per run in logs.
class CompareProgress : public CliObserver {
 public:
  explicit CompareProgress(size_t prompts) : prompts_(prompts) {}
  void run_started(const runs::RunKey& key, const std::string& label) override {
    std::fprintf(stderr, isatty(2) ? "\r[compare] prompt %d/%zu, %s          " : "[compare] prompt %d/%zu, %s\n",
                 key.prompt + 1, prompts_, label.c_str());
  }

 private:
  size_t prompts_;
};

}  // namespace

int cmd_compare(Args& args) {
  const std::string target = model_path(args);
  runs::Job job;
  read_chat_input(args, /*single=*/false, job);
  const bool json = args.has("--json");
  std::vector<runs::LaneRequest> requests;
  const auto methods = args.get("--methods");
  const auto lanes = args.get_all("--lane");
  if (methods || lanes.empty()) requests = runs::parse_method_list(methods.value_or("vanilla,pld"), target);
  for (const auto& l : lanes) requests.push_back(runs::parse_lane(l));
  resolve_lane_specs(requests);
  const runs::LaneDefaults defaults = read_lane_defaults(args, target);
  job.options.max_tokens = args.get_int("--max-tokens", 128);
  job.options.sampling = read_sampling(args);
  job.backend = read_backend(args);
  job.schedule = args.has("--interleaved") ? runs::Schedule::Interleaved : runs::Schedule::Sequential;
  job.references = true;
  job.record = read_recording(args, "compare");
  args.finish();
  job.lanes = runs::resolve_lanes(requests, defaults);
  check_job_memory(job);  // before anything loads: refuse what will not fit

  runs::ModelCache models;
  runs::JobRunner runner(models);
  CompareProgress progress(job.prompts.size());
  runs::JobResult result = runner.run(job, progress);
  if (isatty(2)) std::fprintf(stderr, "\r%60s\r", "");

  std::vector<ReportRun> report_runs;
  for (auto& r : result.runs)
    report_runs.push_back({job.prompts[size_t(r.key.prompt)].text, r.label, r.method,
                           result.targets[size_t(r.key.target)].identity, r.summary, r.identical.value_or(false),
                           std::move(r.steps), r.summary_json.value("tree_auto", nlohmann::json())});
  const auto report = make_compare_report(job.options.sampling.describe(), job.options.max_tokens,
                                          job.options.sampling.greedy(), std::move(report_runs), result.backend,
                                          result.device);
  const int rc = print_compare_report(report, json);
  std::fflush(stdout);
  report_recording(result, job.record);
  return rc;
}

}  // namespace specscope::cli
