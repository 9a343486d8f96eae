// specscope-cli info: what a model is, as the engine understood it.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "engine/model/model.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"

namespace specscope::cli {

int gguf_info(const std::string& path, bool json);  // gguf_info.cpp

int cmd_info(Args& args) {
  std::string path = model_path(args);
  bool json = args.has("--json");
  args.finish();
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0) return gguf_info(path, json);
  auto model = Model::load(path);
  const auto& c = model->config();
  nlohmann::json j = {
      {"path", path},
      {"architecture", c.architecture},
      {"model_type", c.model_type},
      {"layers", c.num_layers},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"heads", c.num_heads},
      {"kv_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"vocab_size", c.vocab_size},
      {"context_length", c.max_position_embeddings},
      {"rope_theta", c.rope_theta},
      {"rope_scaling", c.rope_scaling.type},
      {"tied_embeddings", c.tie_word_embeddings},
      {"stored_dtype", model->weights_dtype()},
      {"parameters", model->parameter_count()},
      {"tokenizer", model->tokenizer().kind()},
      {"chat_template", model->chat_template().family_name()},
      {"eos_ids", model->eos_ids()},
  };
  if (json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model          %s\n", path.c_str());
  std::printf("architecture   %s (%s)\n", c.architecture.c_str(), c.model_type.c_str());
  std::printf("layers         %d\n", c.num_layers);
  std::printf("hidden size    %d (ffn %d)\n", c.hidden_size, c.intermediate_size);
  std::printf("heads          %d (kv heads %d, head dim %d)\n", c.num_heads, c.num_kv_heads, c.head_dim);
  std::printf("vocab size     %d\n", c.vocab_size);
  std::printf("context        %d (rope theta %g, scaling %s)\n", c.max_position_embeddings, c.rope_theta,
              c.rope_scaling.type.c_str());
  std::printf("parameters     %.2fM (%s, %s embeddings)\n", double(model->parameter_count()) / 1e6,
              model->weights_dtype().c_str(), c.tie_word_embeddings ? "tied" : "untied");
  std::printf("tokenizer      %s (%d tokens)\n", model->tokenizer().kind().c_str(), model->tokenizer().vocab_size());
  std::printf("chat template  %s\n", model->chat_template().family_name().c_str());
  if (!model->chat_template().note().empty()) std::printf("               %s\n", model->chat_template().note().c_str());
  return 0;
}

}  // namespace specscope::cli
