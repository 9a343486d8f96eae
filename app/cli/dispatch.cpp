#include "app/cli/commands.h"
#include "app/cli/method_flags.h"
#include "engine/util/error.h"

namespace specscope::cli {

void print_usage(FILE* out) {
  const std::string text =
               std::string("usage: specscope-cli COMMAND [options]\n"
               "commands:\n"
               "  models      [--json]   every model Ollama, LM Studio and the Hugging Face cache hold, with drafters\n"
               "  info        --model PATH [--json]\n"
               "  tokenize    --model PATH --text TEXT [--json]\n"
               "  detokenize  --model PATH --ids 1,2,3\n"
               "  run         --model PATH (--prompt TEXT | --prompt-file F | --messages FILE.json) [--chat]\n"
               "              [--system TEXT] [--chat-template-kwargs JSON] [--max-tokens N]\n"
               "              [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--seed S] [--stop TEXT] [--json]\n"
               "              [--method vanilla|sps|eagle1|eagle2|eagle3|medusa|streaming|lookahead|pld]\n"
               "              drafters come from family.json next to the model; flags override:\n") +
               method_usage() +
               std::string("              recording: [--session-db PATH] [--title TEXT] [--no-record]\n"
               "              [--backend auto|cpu|cuda] (auto: CUDA when built and a device is visible)\n"
               "  compare     (--methods M1,M2,...|all) [--lane 'METHOD[:key=value,...]']... [--interleaved]\n"
               "              (--prompt TEXT | --prompt-file F) [run's options] [--json]\n"
               "              lane keys: model, head, draft and the method's options (e.g. eagle2:total-tokens=30)\n"
               "  sessions    list | show ID | replay ID [--run N] [--speed X] [--follow] [--json]\n"
               "              | export ID [--format json|csv|html] [--table nodes|steps] [--steps A-B] [--out FILE]\n"
               "              | delete ID\n"
               "              | note ID TEXT   [--session-db PATH]\n"
               "  bench       --model PATH [--prompt-tokens N] [--gen-tokens N] [--repeat R] [--json] [--out F]\n"
               "              [--weights as-loaded|int8|int4] (the model requantized, as a drafter's draft-weights)\n"
               "              [--contention] (again beside a busy process)\n"
               "              [--beside DRAFTER [--beside-forwards 3] [--beside-weights as-loaded|int8|int4]]\n"
               "              (steps taking turns with a drafter's forwards)\n"
               "              --suite sessions [--steps 10000] [--nodes 60] [--method sps] [--max-tokens 128]\n"
               "--model, --draft, --head (and lane keys model, head, draft) take a path or a model spec:\n"
               "ollama:NAME[:TAG], hf:ORG/NAME[@REV][/FILE] or lmstudio:PUBLISHER/REPO[/FILE] (see `models`).\n"
               "--chat renders prompts with the model's own chat template; --system TEXT adds a system message and\n"
               "--messages FILE.json gives a whole conversation ([{\"role\": ..., \"content\": \"...\"}, ...]);\n"
               "--chat-template-kwargs JSON passes template variables ('{\"enable_thinking\": false}' for Qwen3); all imply --chat.\n"
               "--weights-memory auto|copy|map (any command): the CPU reads weight matrices from a copy in huge pages\n"
               "(copy; auto: when it fits in MemAvailable with 1 GiB to spare) or from the file's mapping (map).\n"
               "--model defaults to the embedded default model. run and compare record to the session store\n"
               "(default $XDG_DATA_HOME/specscope/sessions.db, i.e. ~/.local/share/specscope/sessions.db).\n");
  std::fputs(text.c_str(), out);
}

int dispatch(const std::string& sub, Args& args) {
  if (sub == "info") return cmd_info(args);
  if (sub == "tokenize") return cmd_tokenize(args);
  if (sub == "detokenize") return cmd_detokenize(args);
  if (sub == "run") return cmd_run(args);
  if (sub == "bench") return cmd_bench(args);
  if (sub == "compare") return cmd_compare(args);
  if (sub == "sessions") return cmd_sessions(args);
  if (sub == "models") return cmd_models(args);
  throw InputError(sub, "unknown command (see specscope-cli --help)");
}

}  // namespace specscope::cli
