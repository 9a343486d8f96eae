// specscope-cli compare: the same prompts with several methods in one process, vanilla first as the
// reference for speedup and (greedy) output equality. Recorded as one session with a run per (prompt, method).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/compare_report.h"
#include "app/cli/method_flags.h"
#include "app/cli/recording.h"
#include "app/cli/run_report.h"
#include "sessions/summary_json.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/model.h"
#include "engine/util/error.h"

namespace specscope::cli {

int cmd_compare(Args& args) {
  std::string path = model_path(args);
  auto prompts = read_prompts(args);
  std::string list = args.get_or("--methods", "vanilla,pld");
  bool chat = args.has("--chat");
  bool json = args.has("--json");
  GenerateOptions opts;
  opts.max_tokens = args.get_int("--max-tokens", 128);
  opts.sampling = read_sampling(args);
  std::vector<std::string> names;
  {
    std::stringstream ss(list);
    std::string m;
    while (std::getline(ss, m, ','))
      if (!m.empty()) names.push_back(m);
  }
  // Vanilla always runs first: it is the reference for speedup and output equality.
  names.erase(std::remove(names.begin(), names.end(), "vanilla"), names.end());
  names.insert(names.begin(), "vanilla");
  std::vector<MethodSpec> specs;
  for (auto& n : names) specs.push_back(read_method_spec(args, n));
  const Backend backend = read_backend(args);
  auto recorder = Recorder::from_args(args);
  args.finish();

  auto model = Model::load(path);
  std::vector<std::unique_ptr<Method>> methods;
  for (auto& s : specs) methods.push_back(make_method(s, *model));

  CompareReport report;
  report.model = model->identity().path;
  report.sampling = opts.sampling.describe();
  report.max_tokens = opts.max_tokens;
  report.greedy = opts.sampling.greedy();
  report.methods = names;
  report.prompts = prompts;
  for (size_t p = 0; p < prompts.size(); ++p) {
    auto ids = encode_prompt(*model, prompts[p], chat);
    std::vector<int32_t> reference;
    double vanilla_tps = 0;
    for (size_t m = 0; m < names.size(); ++m) {
      // Progress: rewritten in place on a terminal, one line per run in logs.
      std::fprintf(stderr, isatty(2) ? "\r[compare] prompt %zu/%zu, %s          " : "[compare] prompt %zu/%zu, %s\n",
                   p + 1, prompts.size(), names[m].c_str());
      auto ctx = new_context(*model, backend, 0);
      if (recorder && p == 0 && m == 0) recorder->begin_session(*model, "compare", ctx->backend_name());
      int64_t run_id = 0;
      if (recorder)
        run_id = recorder->begin_run({specs[m], opts.sampling, opts.max_tokens, opts.stop_strings, prompts[p], chat,
                                      int(ids.size())});
      StepCallback on_step;
      if (recorder)
        on_step = [&](const StepRecord& rec, const std::string& piece) {
          recorder->step(run_id, rec, piece);
          return true;
        };
      auto res = generate_speculative(*model, *ctx, *methods[m], ids, opts, on_step);
      auto& s = res.summary;
      if (m == 0) {
        reference = res.gen.tokens;
        vanilla_tps = s.tokens_per_second;
      }
      s.speedup_vs_vanilla = vanilla_tps > 0 ? s.tokens_per_second / vanilla_tps : kNoValue;
      const bool same = res.gen.tokens == reference;
      if (recorder) {
        auto summary = sessions::run_summary_json(s, res.gen, report.sampling, ctx->backend_name());
        recorder->finish_run(run_id, {s, res.gen.text, same, json_line(summary)});
      }
      report.runs.push_back({p, m, s, same, std::move(res.steps)});
    }
  }
  if (isatty(2)) std::fprintf(stderr, "\r%60s\r", "");
  const int rc = print_compare_report(report, json);
  std::fflush(stdout);
  if (recorder) recorder->finish();
  return rc;
}

}  // namespace specscope::cli
