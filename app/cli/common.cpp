#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "app/cli/commands.h"
#include "engine/discovery/model_spec.h"
#include "engine/model/default_model.h"
#include "engine/model/resident_weights.h"
#include "engine/util/error.h"

namespace specscope::cli {

// The one place --model is read: a path, or a model spec (ollama:NAME[:TAG], hf:ORG/NAME[@REV][/FILE],
// lmstudio:PUBLISHER/REPO[/FILE], engine/discovery/model_spec.h) resolved to the path the loaders take.
std::string model_path(Args& args) {
  auto m = args.get("--model");
  return m ? discovery::resolve_model_arg(*m, discovery::StoreRoots::from_environment()) : default_model_path();
}

// Logs go to stderr so that stdout stays clean for text and JSON. SPECSCOPE_LOG=debug|info|warn|off.
void setup_logging() {
  auto logger = spdlog::stderr_color_mt("specscope");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  const char* lvl = std::getenv("SPECSCOPE_LOG");
  spdlog::set_level(lvl ? spdlog::level::from_str(lvl) : spdlog::level::warn);
}

// Options every command takes, applied before it runs. --weights-memory: where the CPU reads weight matrices from
// (engine/model/resident_weights.h).
void apply_global_options(Args& args) {
  if (auto m = args.get("--weights-memory")) {
    const auto setting = parse_weight_memory(*m);
    if (!setting) throw InputError("--weights-memory", "expected auto, copy or map, got '" + *m + "'");
    set_weight_memory(*setting);
  }
}

}  // namespace specscope::cli
