#include "engine/heads/streaming_weights.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/formats/safetensors.h"
#include "engine/heads/head_files.h"
#include "engine/model/model.h"
#include "engine/util/error.h"

namespace specscope {
namespace fs = std::filesystem;

bool StreamingWeights::present(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / "streaming_config.json", ec);
}

std::shared_ptr<const StreamingWeights> StreamingWeights::load(const std::string& dir, const Model& target) {
  const std::string cfg_path = (fs::path(dir) / "streaming_config.json").string();
  if (!fs::exists(cfg_path))
    throw InputError(cfg_path, "missing: a Speculative Streaming model directory has streaming_config.json and "
                               "streaming.safetensors (training/train_streaming.py writes them)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(cfg_path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(cfg_path, std::string("invalid JSON: ") + e.what());
  }
  const auto& mc = target.config();
  auto w = std::make_shared<StreamingWeights>();
  StreamingConfig& c = w->cfg_;
  try {
    c.num_streams = j.at("num_streams").get<int>();
    c.msa_layers = j.at("msa_layers").get<int>();
    c.stream_rank = j.at("stream_rank").get<int>();
    c.prune_layer = j.at("prune_layer").get<int>();
    c.prune_rank = j.value("prune_rank", 8);
    c.prune_threshold = j.value("prune_threshold", 0.0f);
    c.top_k = j.value("top_k", 3);
    c.default_streams = j.value("default_streams", 0);
    c.total_tokens = j.value("total_tokens", 0);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(cfg_path, std::string("missing or mistyped field: ") + e.what());
  }
  if (c.num_streams < 1 || c.num_streams > 16) throw InputError(cfg_path, "num_streams must be in 1..16");
  if (c.msa_layers < 1 || c.msa_layers > mc.num_layers)
    throw InputError(cfg_path, "msa_layers must be in 1.." + std::to_string(mc.num_layers) + " (the model's layers)");
  if (c.prune_layer < 0 || c.prune_layer >= mc.num_layers - 1)
    throw InputError(cfg_path, "prune_layer must be in 0.." + std::to_string(mc.num_layers - 2));
  if (c.stream_rank < 1 || c.prune_rank < 1 || c.top_k < 1) throw InputError(cfg_path, "ranks and top_k must be >= 1");
  if (c.default_streams < 0 || c.default_streams > c.num_streams)
    throw InputError(cfg_path, "default_streams must be in 0..num_streams");
  if (c.default_streams == 0) c.default_streams = c.num_streams;
  if (c.total_tokens < 0) throw InputError(cfg_path, "total_tokens must be >= 0 (0: the whole tree)");
  if (!(c.prune_threshold >= 0.f && c.prune_threshold < 1.f))
    throw InputError(cfg_path, "prune_threshold must be in [0, 1)");

  auto store = open_head_weights(dir, {"streaming.safetensors"});
  w->store_ = store;
  const std::string file = store->files.front();
  const int64_t H = mc.hidden_size;
  auto get = [&](const std::string& name, std::vector<int64_t> shape) {
    if (!store->has(name)) throw InputError(file, "tensor '" + name + "' is missing");
    TensorView t = store->get(name);
    if (t.shape != shape)
      throw InputError(file, "tensor '" + name + "' has shape " + t.shape_str() +
                                 " (expected from streaming_config.json and the model's hidden size " +
                                 std::to_string(H) + ")");
    if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
      throw InputError(file, "tensor '" + name + "' must be f32, f16 or bf16");
    return t;
  };
  w->stream_down = get("stream.down.weight", {c.stream_rank, H});
  w->stream_up = get("stream.up.weight", {H, c.stream_rank});
  w->prune_down = get("prune.down.weight", {c.prune_rank, H});
  w->prune_up = get("prune.up.weight", {H, c.prune_rank});
  w->embeddings = get("stream.embeddings", {c.num_streams, H}).to_f32();
  spdlog::info("loaded Speculative Streaming tensors from {}: {} streams, {} MSA layers, eta {}, pruning at layer {} "
               "(threshold {:.3g})",
               dir, c.num_streams, c.msa_layers, c.stream_rank, c.prune_layer, c.prune_threshold);
  return w;
}

uint64_t StreamingWeights::parameter_count() const {
  uint64_t n = 0;
  for (auto& [name, t] : store_->all()) n += uint64_t(t.numel());
  return n;
}

}  // namespace specscope
