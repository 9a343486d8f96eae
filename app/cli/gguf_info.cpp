// `specscope-cli info` on a .gguf file: what the file holds (architecture, hyper-parameters, tokenizer, file type,
// tensor types), read by the GGUF reader without loading a model, and whether `run` can load it (judged from the
// metadata and tensor types; see gguf_load_problem).
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "engine/formats/gguf.h"
#include "engine/formats/gguf_file_type.h"
#include "engine/formats/gguf_quant.h"
#include "engine/model/gguf_model.h"

namespace specscope::cli {

int gguf_info(const std::string& path, bool json) {
  const GgufFile f = GgufFile::open(path);
  const std::string arch = f.get_string("general.architecture", "");
  std::map<std::string, std::pair<long, uint64_t>> by_type;  // type -> tensors, elements
  uint64_t elements = 0;
  for (const auto& t : f.tensors()) {
    auto& e = by_type[std::string(ggml_type_name(t.type))];
    e.first++;
    e.second += uint64_t(t.numel());
    elements += uint64_t(t.numel());
  }
  auto num = [&](const std::string& key) -> nlohmann::json {
    if (!f.has(key)) return nullptr;
    const GgufValue& v = f.get(key);
    if (v.is_integer()) return f.get_int(key);
    if (v.is_float()) return f.get_float(key);
    return nullptr;
  };
  const std::string problem = gguf_load_problem(f);
  nlohmann::json types = nlohmann::json::object();
  for (auto& [name, e] : by_type) types[name] = {{"tensors", e.first}, {"elements", e.second}};
  nlohmann::json j = {{"path", path},
                      {"format", "gguf"},
                      {"gguf_version", f.version()},
                      {"architecture", arch},
                      {"name", f.get_string("general.name", "")},
                      {"layers", num(arch + ".block_count")},
                      {"hidden_size", num(arch + ".embedding_length")},
                      {"intermediate_size", num(arch + ".feed_forward_length")},
                      {"experts", num(arch + ".expert_count")},
                      {"experts_per_token", num(arch + ".expert_used_count")},
                      {"shared_expert_ffn", num(arch + ".expert_shared_feed_forward_length")},
                      {"heads", num(arch + ".attention.head_count")},
                      {"kv_heads", num(arch + ".attention.head_count_kv")},
                      {"context_length", num(arch + ".context_length")},
                      {"rope_theta", num(arch + ".rope.freq_base")},
                      {"tokenizer", f.get_string("tokenizer.ggml.model", "")},
                      {"tokenizer_pre", f.get_string("tokenizer.ggml.pre", "")},
                      {"vocab_size", f.has("tokenizer.ggml.tokens") ? nlohmann::json(f.array_size("tokenizer.ggml.tokens"))
                                                                    : nlohmann::json(nullptr)},
                      {"has_chat_template", f.has("tokenizer.chat_template")},
                      {"tensors", f.tensors().size()},
                      {"parameters", elements},
                      {"file_type", gguf_file_type_name(f)},
                      {"tensor_types", types},
                      {"metadata_keys", f.metadata().size()},
                      {"loadable", problem.empty()},
                      {"load_problem", problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(problem)}};
  if (json) {
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("file           %s (GGUF v%u, %zu metadata keys, %zu tensors)\n", path.c_str(), f.version(),
              f.metadata().size(), f.tensors().size());
  std::printf("architecture   %s%s\n", arch.empty() ? "(none)" : arch.c_str(),
              f.has("general.name") ? (" · " + f.get_string("general.name")).c_str() : "");
  for (const char* key : {"block_count", "embedding_length", "feed_forward_length", "expert_count", "expert_used_count",
                          "expert_feed_forward_length", "expert_shared_feed_forward_length", "attention.head_count",
                          "attention.head_count_kv",
                          "context_length", "rope.freq_base"}) {
    auto v = num(arch + "." + key);
    if (!v.is_null()) std::printf("%-14s %s\n", key, v.dump().c_str());
  }
  std::printf("tokenizer      %s%s%s\n", f.get_string("tokenizer.ggml.model", "(none)").c_str(),
              f.has("tokenizer.ggml.pre") ? (" (pre " + f.get_string("tokenizer.ggml.pre") + ")").c_str() : "",
              f.has("tokenizer.chat_template") ? ", with a chat template" : "");
  std::printf("parameters     %.2fM\n", double(elements) / 1e6);
  std::printf("file type      %s\n", gguf_file_type_name(f).c_str());
  for (auto& [name, e] : by_type) std::printf("  %-8s %4ld tensors, %.2fM values\n", name.c_str(), e.first, double(e.second) / 1e6);
  if (problem.empty()) std::printf("loadable       yes (specscope-cli run --model %s)\n", path.c_str());
  else std::printf("loadable       no: %s\n", problem.c_str());
  return 0;
}

}  // namespace specscope::cli
