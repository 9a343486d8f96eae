// specscope-cli run: generate from a prompt with any method, streaming text (or StepRecords as JSON lines),
// recorded to the session store unless --no-record.
#include <cstdio>

#include "app/cli/commands.h"
#include "app/cli/method_flags.h"
#include "app/cli/recording.h"
#include "app/cli/run_report.h"
#include "sessions/summary_json.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/model.h"
#include "engine/util/error.h"

namespace specscope::cli {

int cmd_run(Args& args) {
  std::string path = model_path(args);
  std::string prompt = read_prompt(args);
  bool chat = args.has("--chat");
  bool json = args.has("--json");
  MethodSpec spec = read_method_spec(args, args.get_or("--method", "vanilla"));
  GenerateOptions opts;
  opts.max_tokens = args.get_int("--max-tokens", 128);
  opts.sampling = read_sampling(args);
  if (auto stop = args.get("--stop")) opts.stop_strings.push_back(*stop);
  int n_ctx = args.get_int("--context", 0);
  const Backend backend = read_backend(args);
  if (opts.max_tokens < 0) throw InputError("--max-tokens", "must be >= 0");
  auto recorder = Recorder::from_args(args);  // before the model: a bad --session-db fails fast
  args.finish();

  auto model = Model::load(path);
  auto method = make_method(spec, *model);
  auto ctx = new_context(*model, backend, n_ctx);
  auto ids = encode_prompt(*model, prompt, chat);
  int64_t run_id = 0;
  if (recorder) {
    recorder->begin_session(*model, "run", ctx->backend_name());
    if (chat) recorder->message("user", prompt);
    run_id = recorder->begin_run({spec, opts.sampling, opts.max_tokens, opts.stop_strings, prompt, chat,
                                  int(ids.size())});
  }
  auto on_step = [&](const StepRecord& rec, const std::string& piece) {
    if (json) std::printf("%s\n", step_json_line(rec).c_str());
    else std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    if (recorder) recorder->step(run_id, rec, piece);
    return true;
  };
  auto res = generate_speculative(*model, *ctx, *method, ids, opts, on_step);
  const nlohmann::json summary =
      sessions::run_summary_json(res.summary, res.gen, opts.sampling.describe(), ctx->backend_name());
  if (json) {
    std::printf("%s\n", json_line(summary).c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr, "%s\n", run_footer(summary).c_str());
  }
  std::fflush(stdout);
  if (recorder) {
    recorder->finish_run(run_id, {res.summary, res.gen.text, std::nullopt, json_line(summary)});
    if (chat) recorder->message("assistant", res.gen.text, run_id);
    recorder->finish();
  }
  return 0;
}

}  // namespace specscope::cli
