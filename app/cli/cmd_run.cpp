// specscope-cli run: generate from a prompt, streaming text (or JSON lines) to stdout.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "engine/generate/generator.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"

namespace specscope::cli {

std::string read_prompt(Args& args) {
  auto prompt = args.get("--prompt");
  auto file = args.get("--prompt-file");
  if (prompt && file) throw InputError("--prompt", "give either --prompt or --prompt-file, not both");
  if (!prompt && !file) throw InputError("--prompt", "required (or --prompt-file)");
  if (prompt) {
    if (auto bad = find_invalid_utf8(*prompt); bad != std::string::npos)
      throw InputError("--prompt", "invalid UTF-8 at byte " + std::to_string(bad));
    return *prompt;
  }
  std::string text = read_text_file(*file);
  if (auto bad = find_invalid_utf8(text); bad != std::string::npos)
    throw InputError(*file, "invalid UTF-8 at byte " + std::to_string(bad));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

SamplingParams read_sampling(Args& args) {
  SamplingParams p;
  p.temperature = float(args.get_double("--temperature", 0.0));
  p.top_k = args.get_int("--top-k", 0);
  p.top_p = float(args.get_double("--top-p", 1.0));
  p.min_p = float(args.get_double("--min-p", 0.0));
  p.seed = uint64_t(args.get_int("--seed", 0));
  p.validate();
  return p;
}

int cmd_run(Args& args) {
  std::string path = model_path(args);
  std::string prompt = read_prompt(args);
  bool chat = args.has("--chat");
  bool json = args.has("--json");
  GenerateOptions opts;
  opts.max_tokens = args.get_int("--max-tokens", 128);
  opts.sampling = read_sampling(args);
  if (auto stop = args.get("--stop")) opts.stop_strings.push_back(*stop);
  int n_ctx = args.get_int("--context", 0);
  args.finish();
  if (opts.max_tokens < 0) throw InputError("--max-tokens", "must be >= 0");

  auto model = Model::load(path);
  auto ctx = model->new_cpu_context(n_ctx);
  auto ids = encode_prompt(*model, prompt, chat);
  int step = 0;
  auto on_token = [&](int32_t tok, const std::string& piece) {
    if (json) {
      nlohmann::json j = {{"type", "step"}, {"step", step++}, {"token", tok}, {"text", piece}};
      if (tok < 0) j["token"] = nullptr;
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
    }
    std::fflush(stdout);
    return true;
  };
  auto r = generate(*model, *ctx, ids, opts, on_token);
  double wall = r.prefill_seconds + r.decode_seconds;
  if (json) {
    nlohmann::json s = {{"type", "summary"},
                        {"method", "vanilla"},
                        {"prompt_tokens", r.prompt_tokens},
                        {"new_tokens", r.tokens.size()},
                        {"target_forwards", r.target_forwards},
                        {"wall_seconds", wall},
                        {"prefill_tokens_per_second", r.prefill_tokens_per_second()},
                        {"decode_tokens_per_second", r.decode_tokens_per_second()},
                        {"stop_reason", r.stop_reason},
                        {"sampling", opts.sampling.describe()},
                        {"backend", ctx->backend_name()}};
    std::printf("%s\n", s.dump().c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr, "[%zu tokens in %.2fs | prefill %d tokens at %.1f tok/s | decode %.1f tok/s | %s | stop: %s]\n",
                 r.tokens.size(), wall, r.prompt_tokens, r.prefill_tokens_per_second(), r.decode_tokens_per_second(),
                 ctx->backend_name().c_str(), r.stop_reason.c_str());
  }
  return 0;
}

}  // namespace specscope::cli
