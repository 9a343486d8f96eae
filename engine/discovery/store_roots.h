#pragma once
// Where the other tools on this machine keep their models. Discovery only ever reads these folders.
//   Ollama:       $OLLAMA_MODELS, else ~/.ollama/models and the Linux service's /usr/share/ollama/.ollama/models
//                 (the systemd unit runs as user ollama, whose home that is)
//   LM Studio:    ~/.lmstudio/models and ~/.cache/lm-studio/models (the layout before LM Studio 0.3)
//   Hugging Face: $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE (its older name), else $HF_HOME/hub, else
//                 $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (huggingface_hub's own order)
#include <string>
#include <vector>

namespace specscope::discovery {

enum class Source { Ollama, LmStudio, HfCache };
const char* source_name(Source s);  // "ollama", "lmstudio", "hf": also the model-spec prefixes

struct StoreRoots {
  std::vector<std::string> ollama, lmstudio, hf;

  // From the environment as described above; folders that do not exist are kept (the listing says so).
  static StoreRoots from_environment();
  const std::vector<std::string>& of(Source s) const;
  // Whether `path` lies inside one of the roots (after resolving links), and which source that is.
  bool contains(const std::string& path, Source* which = nullptr) const;
};

}  // namespace specscope::discovery
