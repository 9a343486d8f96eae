// specscope-cli run: generate from a prompt with any method, streaming text (or StepRecords as JSON lines).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/method_flags.h"
#include "engine/methods/speculative_generator.h"
#include "engine/methods/step_record_json.h"
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
  args.finish();
  if (opts.max_tokens < 0) throw InputError("--max-tokens", "must be >= 0");

  auto model = Model::load(path);
  auto method = make_method(spec, *model);
  auto ctx = model->new_cpu_context(n_ctx);
  auto ids = encode_prompt(*model, prompt, chat);
  auto on_step = [&](const StepRecord& rec, const std::string& piece) {
    if (json) {
      std::printf("%s\n", to_json(rec).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
    }
    std::fflush(stdout);
    return true;
  };
  auto res = generate_speculative(*model, *ctx, *method, ids, opts, on_step);
  const auto& s = res.summary;
  if (json) {
    nlohmann::json j = to_json(s);
    j["prompt_tokens"] = res.gen.prompt_tokens;
    j["prefill_tokens_per_second"] = res.gen.prefill_tokens_per_second();
    j["decode_tokens_per_second"] = res.gen.decode_tokens_per_second();
    j["sampling"] = opts.sampling.describe();
    j["backend"] = ctx->backend_name();
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr,
                 "[%s | %d tokens in %.2fs | prefill %d tokens at %.1f tok/s | decode %.1f tok/s | tau %.2f over %d "
                 "steps | %s | stop: %s]\n",
                 s.method.c_str(), s.new_tokens, s.wall_seconds, res.gen.prompt_tokens,
                 res.gen.prefill_tokens_per_second(), s.tokens_per_second, s.tau, s.steps, ctx->backend_name().c_str(),
                 s.stop_reason.c_str());
  }
  return 0;
}

}  // namespace specscope::cli
