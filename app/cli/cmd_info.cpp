// specscope-cli info: what a model is, as the engine understood it.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "engine/discovery/model_probe.h"
#include "engine/heads/head_overhead.h"
#include "engine/heads/streaming_weights.h"
#include "engine/methods/method_registry.h"
#include "engine/model/family_manifest.h"
#include "engine/model/model.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"

namespace specscope::cli {

int gguf_info(const std::string& path, bool json);  // gguf_info.cpp

int cmd_info(Args& args) {
  std::string path = model_path(args);
  bool json = args.has("--json");
  args.finish();
  // By name or content: Ollama's blobs are GGUF files without the extension.
  const bool gguf_name = path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
  if (gguf_name || discovery::looks_like_gguf(path)) return gguf_info(path, json);
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
  if (c.moe())  // a mixture of experts: how many, how many a token takes, how wide, in which layers
    j["experts"] = {{"count", c.num_experts}, {"per_token", c.experts_per_token}, {"ffn", c.expert_ffn},
                    {"renormalized", c.norm_topk_prob},
                    {"layers", c.expert_layers()},
                    {"shared_expert_ffn", c.shared_expert_ffn > 0 ? nlohmann::json(c.shared_expert_ffn) : nlohmann::json(nullptr)},
                    {"scores", c.expert_sigmoid ? "sigmoid" : "softmax"},
                    {"groups", c.expert_groups > 0 ? nlohmann::json({c.expert_groups_used, c.expert_groups}) : nlohmann::json(nullptr)},
                    {"scale", c.routed_scaling}};
  // Where the norms are (Llama: before each sublayer; Gemma: before and after; OLMo: after only) and the q/k norms'
  // span; which layers slide.
  j["norms"] = {{"before_sublayers", c.pre_norms}, {"after_sublayers", c.sandwich_norms},
                {"qk", c.qk_norm_whole ? nlohmann::json("whole_projection") : c.qk_norm ? nlohmann::json("per_head")
                                                                                     : nlohmann::json(nullptr)}};
  int sliding = 0;
  for (int l = 0; l < c.num_layers; ++l) sliding += c.window_of(l) > 0;
  const float sliding_theta = c.rope_local_theta > 0.f ? c.rope_local_theta : c.rope_theta;
  if (sliding > 0)
    j["sliding"] = {{"window", *c.sliding_window}, {"layers", sliding}, {"rope_theta", sliding_theta}};
  const int no_rope = int(std::count(c.layer_no_rope.begin(), c.layer_no_rope.end(), uint8_t(1)));
  if (no_rope > 0) j["layers_without_rope"] = no_rope;  // SmolLM3's NoPE layers
  if (c.mla())  // DeepSeek's multi-head latent attention: what a token caches instead of per-head keys and values
    j["latent_attention"] = {{"kv_lora_rank", c.kv_lora_rank},
                             {"q_lora_rank", c.q_lora_rank > 0 ? nlohmann::json(c.q_lora_rank) : nlohmann::json(nullptr)},
                             {"rope_dim", c.rotary_dims()}, {"value_dim", c.value_dim()},
                             {"cached_floats_per_token_and_layer", c.cache_key_dim() + c.cache_value_dim()}};
  // Speculative Streaming models carry their streams; every model gets the heads' parameter overheads.
  std::shared_ptr<const StreamingWeights> streaming;
  if (StreamingWeights::present(path)) streaming = StreamingWeights::load(path, *model);
  const auto overheads = head_overheads(*model, streaming.get());
  if (streaming) {
    const auto& s = streaming->config();
    j["streaming"] = {{"num_streams", s.num_streams}, {"msa_layers", s.msa_layers}, {"stream_rank", s.stream_rank},
                      {"prune_layer", s.prune_layer}, {"prune_threshold", s.prune_threshold},
                      {"top_k", s.top_k}, {"parameters", streaming->parameter_count()}};
  }
  for (const auto& o : overheads)
    j["head_overheads"].push_back(
        {{"method", o.method}, {"parameters", o.parameters}, {"formula", o.formula}, {"layout", o.layout}});
  // The methods, from the registry, with what the family manifest next to this model supplies for each.
  const auto family = FamilyManifest::find_for(path);
  if (family) j["family_manifest"] = family->file;
  for (const auto& m : method_registry()) {
    nlohmann::json mj = {{"name", m.name}, {"title", m.title}, {"needs", need_description(m.needs)},
                         {"options", nlohmann::json::array()}};
    for (const auto& o : m.options) mj["options"].push_back({{"key", o.key}, {"default", o.default_value}, {"help", o.help}});
    if (const FamilyEntry* e = family ? family->entry(m.name) : nullptr) {
      if (!e->draft.empty()) mj["draft"] = e->draft;
      if (!e->head.empty()) mj["head"] = e->head;
      if (!e->model.empty()) mj["model"] = e->model;
    }
    j["methods"].push_back(mj);
  }
  if (json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model          %s\n", path.c_str());
  std::printf("architecture   %s (%s)\n", c.architecture.c_str(), c.model_type.c_str());
  std::printf("layers         %d\n", c.num_layers);
  std::printf("hidden size    %d (ffn %d)\n", c.hidden_size, c.intermediate_size);
  std::printf("heads          %d (kv heads %d, head dim %d)\n", c.num_heads, c.num_kv_heads, c.head_dim);
  if (!c.pre_norms || c.sandwich_norms || c.qk_norm)
    std::printf("norms          %s%s\n",
                c.pre_norms && c.sandwich_norms ? "before and after each sublayer"
                : c.pre_norms                   ? "before each sublayer"
                                                : "after each sublayer (none before)",
                c.qk_norm_whole ? "; q and k over their whole projections" : c.qk_norm ? "; q and k per head" : "");
  if (sliding > 0)
    std::printf("sliding        a window of %d on %d of %d layers (rope theta %g there)\n", *c.sliding_window, sliding,
                c.num_layers, double(sliding_theta));
  if (no_rope > 0)
    std::printf("no rope        in %d of %d layers (their attention sees no positions but the causal mask)\n", no_rope,
                c.num_layers);
  if (c.moe())
    std::printf("experts        %d of %d per token (ffn %d, weights %s) in %d of %d layers\n", c.experts_per_token,
                c.num_experts, c.expert_ffn, c.norm_topk_prob ? "renormalized" : "as the softmax gives them",
                c.expert_layers(), c.num_layers);
  if (c.moe() && (c.expert_sigmoid || c.expert_groups > 0 || c.routed_scaling != 1.f))
    std::printf("routing        %s scores%s, weights times %g\n", c.expert_sigmoid ? "sigmoid" : "softmax",
                c.expert_groups > 0 ? (", within the best " + std::to_string(c.expert_groups_used) + " of " +
                                       std::to_string(c.expert_groups) + " groups").c_str()
                                    : "",
                double(c.routed_scaling));
  if (c.shared_expert_ffn > 0)
    std::printf("shared expert  ffn %d, every token, %s\n", c.shared_expert_ffn,
                c.shared_expert_gated ? "scaled by sigmoid of its gate" : "added as it is");
  if (c.mla())
    std::printf("latent attn    kv rank %d, q rank %s, rope %d, value %d: %d floats cached a token and layer\n",
                c.kv_lora_rank, c.q_lora_rank > 0 ? std::to_string(c.q_lora_rank).c_str() : "none", c.rotary_dims(),
                c.value_dim(), c.cache_key_dim() + c.cache_value_dim());
  std::printf("vocab size     %d\n", c.vocab_size);
  std::printf("context        %d (rope theta %g, scaling %s)\n", c.max_position_embeddings, c.rope_theta,
              c.rope_scaling.type.c_str());
  std::printf("parameters     %.2fM (%s, %s embeddings)\n", double(model->parameter_count()) / 1e6,
              model->weights_dtype().c_str(), c.tie_word_embeddings ? "tied" : "untied");
  std::printf("tokenizer      %s (%d tokens)\n", model->tokenizer().kind().c_str(), model->tokenizer().vocab_size());
  std::printf("chat template  %s\n", model->chat_template().family_name().c_str());
  if (!model->chat_template().note().empty()) std::printf("               %s\n", model->chat_template().note().c_str());
  if (streaming) {
    const auto& s = streaming->config();
    std::printf("streaming      %d streams, %d MSA layers, eta %d, pruning after layer %d (threshold %.3g), k %d\n",
                s.num_streams, s.msa_layers, s.stream_rank, s.prune_layer, s.prune_threshold, s.top_k);
  }
  std::printf("extra parameters per speculative method on this model:\n");
  for (const auto& o : overheads)
    std::printf("  %-10s %10.3fM  %5.2f%%  %s; %s\n", o.method.c_str(), double(o.parameters) / 1e6,
                100.0 * double(o.parameters) / double(model->parameter_count()), o.formula.c_str(), o.layout.c_str());
  std::printf("methods%s:\n", family ? (" (drafters from " + family->file + ")").c_str() : "");
  for (const auto& m : j["methods"]) {
    std::string from;
    for (const char* k : {"draft", "head", "model"})
      if (m.contains(k)) from = std::string(k) + " " + m[k].get<std::string>();
    std::printf("  %-10s %s%s%s\n", m["name"].get<std::string>().c_str(), m["title"].get<std::string>().c_str(),
                from.empty() ? "" : "; ", from.c_str());
  }
  return 0;
}

}  // namespace specscope::cli
