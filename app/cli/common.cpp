#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "app/cli/commands.h"
#include "engine/discovery/model_spec.h"
#include "engine/model/default_model.h"

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

}  // namespace specscope::cli
