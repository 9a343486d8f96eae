// specscope-cli run: generate from a prompt with any method, streaming text (or StepRecords as JSON lines),
// recorded to the session store unless --no-record. A thin adapter over the run library (runs/).
#include <cstdio>

#include "app/cli/chat_input.h"
#include "app/cli/commands.h"
#include "app/cli/memory_check.h"
#include "app/cli/method_flags.h"
#include "app/cli/recording.h"
#include "app/cli/reply_printer.h"
#include "app/cli/run_report.h"
#include "engine/model/family_manifest.h"
#include "engine/util/error.h"
#include "runs/runner.h"
#include "sessions/summary_json.h"

namespace specscope::cli {

namespace {

// Streams the text (or one JSON line per step) as the steps come; a reasoning model's thinking apart from its
// answer (ReplyPrinter). The JSON lines keep the text as generated.
class RunPrinter : public CliObserver {
 public:
  explicit RunPrinter(bool json) : json_(json) {}
  // Said up front, on stderr (stdout stays the text or the JSON lines): the answer cannot be that long.
  void context_fitted(const runs::RunKey&, const runs::ContextUse& use) override {
    if (const std::string note = runs::max_tokens_note(use); !note.empty())
      std::fprintf(stderr, "warning: %s\n", note.c_str());
  }
  void reply_shaped(const runs::RunKey&, const ReplyShape& shape) override { reply_ = ReplyPrinter(shape); }
  bool step(const runs::RunKey&, const StepRecord& rec, const std::string& piece) override {
    if (json_) std::printf("%s\n", step_json_line(rec).c_str());
    else reply_.print(piece);
    std::fflush(stdout);
    return true;
  }
  void finish() { reply_.finish(); }

 private:
  bool json_;
  ReplyPrinter reply_;
};

}  // namespace

int cmd_run(Args& args) {
  const std::string target = model_path(args);
  runs::Job job;
  read_chat_input(args, /*single=*/true, job);
  const bool json = args.has("--json");
  job.lanes = {read_single_lane(args, args.get_or("--method", "vanilla"), target)};
  // A method the family trained its own target for (Medusa-2, Speculative Streaming) runs on that model, not on
  // --model: say so up front, since its answers are that model's.
  if (const runs::Lane& lane = job.lanes[0]; !same_path(lane.target, target))
    std::fprintf(stderr, "note: %s runs on its own target %s (the family's fine-tune of %s, trained with its drafter)\n",
                 lane.method.name.c_str(), lane.target.c_str(), target.c_str());
  job.options.max_tokens = args.get_int("--max-tokens", 128);
  job.options.sampling = read_sampling(args);
  if (auto stop = args.get("--stop")) job.options.stop_strings.push_back(*stop);
  job.n_ctx = args.get_int("--context", 0);
  job.backend = read_backend(args);
  job.references = false;
  if (job.options.max_tokens < 0) throw InputError("--max-tokens", "must be >= 0");
  job.record = read_recording(args, "run");  // before the model: a bad --session-db fails fast
  args.finish();
  check_job_memory(job);  // before anything loads: refuse what will not fit

  runs::ModelCache models;
  runs::JobRunner runner(models);
  RunPrinter printer(json);
  const runs::JobResult result = runner.run(job, printer);
  printer.finish();
  const runs::RunResult& run = result.runs.at(0);
  const nlohmann::json& summary = run.summary_json;  // as recorded: replay prints the same
  if (json) {
    std::printf("%s\n", json_line(summary).c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr, "%s\n", run_footer(summary).c_str());
  }
  // An answer cut by the end of the context is not a normal end: say so (JSON keeps "stop_reason": "context").
  if (run.gen.stop_reason == "context") std::fprintf(stderr, "note: %s\n", runs::context_full_note(run.context).c_str());
  std::fflush(stdout);
  report_recording(result, job.record);
  return 0;
}

}  // namespace specscope::cli
