#include "engine/methods/method_registry.h"

#include <algorithm>

#include "engine/util/error.h"

namespace specscope {

namespace {

using K = OptionKind;

// tree=auto: sized for this device by the run library (runs/tree_tuner.h) from the measured step-cost curve and a
// short calibration; the other size options then come from the tuner.
MethodOption tree_option() {
  return {"tree", K::Choice, "published",
          "published: the paper's defaults; auto: the size with the most expected tokens/s on this machine (the "
          "default on CPU when no size is given)"};
}

// An EAGLE or Medusa head's own weights as loaded or requantized (engine/cpu/weight_form.h).
MethodOption head_weights_option() {
  return {"head-weights", K::Choice, "as-loaded",
          "as-loaded, int8 (the head's layers requantized per row: half of bf16's bytes) or int4 (4 bits per 32 "
          "weights: 0.28 of bf16's); EAGLE-1/2 draft from such a copy of the target's LM head too; drafts change, "
          "output not"};
}

// EAGLE-2/3 share the dynamic tree's three knobs (EAGLE-2 paper, Table 6 / the official ea_model defaults).
std::vector<MethodOption> dynamic_tree_options() {
  return {{"total-tokens", K::Int, "60", "nodes verified per step, the root included (EAGLE's total_token)"},
          {"depth", K::Int, "5", "expansion levels after the root's children"},
          {"draft-top-k", K::Int, "10", "children expanded per frontier node (EAGLE's top_k)"},
          head_weights_option(), tree_option()};
}

std::vector<MethodInfo> build() {
  std::vector<MethodInfo> r;
  r.push_back({"vanilla", "Vanilla decoding", "one target forward per token; the reference", MethodNeed::Nothing, {}});
  r.push_back({"sps", "Speculative sampling with a draft model",
               "Leviathan et al. 2023, Chen et al. 2023 (tree variant: SpecInfer)", MethodNeed::DraftModel,
               {{"gamma", K::Int, "4", "draft tokens per step (the chain's length)"},
                {"branching", K::IntList, "", "children per node at each depth, e.g. 2,2,1 (default: a chain)"},
                {"confidence-threshold", K::Number, "0",
                 "stop a branch after a draft the drafter gives less than this probability (transformers' "
                 "assistant_confidence_threshold; 0: off, always gamma deep)"},
                {"draft-weights", K::Choice, "as-loaded",
                 "as-loaded, int8 (the drafter requantized per row: half of bf16's bytes) or int4 (4 bits per 32 "
                 "weights: 0.28 of bf16's); drafts change, output not"},
                tree_option()}});
  r.push_back({"eagle1", "EAGLE-1 (static draft tree)", "Li et al. 2024, EAGLE; tree mc_sim_7b_63",
               MethodNeed::EagleHead,
               {{"tree-choices", K::File, "mc_sim_7b_63", "a tree_choices JSON file (default: EAGLE's mc_sim_7b_63)"},
                head_weights_option(), tree_option()}});
  r.push_back({"eagle2", "EAGLE-2 (dynamic draft trees)", "Li et al. 2024, EAGLE-2", MethodNeed::EagleHead,
               dynamic_tree_options()});
  r.push_back({"eagle3", "EAGLE-3 (fused features, training-time test)", "Li et al. 2025, EAGLE-3",
               MethodNeed::Eagle3Head, dynamic_tree_options()});
  r.push_back({"medusa", "Medusa (parallel heads, tree attention)", "Cai et al. 2024, Medusa; tree mc_sim_7b_63",
               MethodNeed::MedusaHeads,
               {{"tree-choices", K::File, "mc_sim_7b_63", "a tree_choices JSON file (default: Medusa's mc_sim_7b_63)"},
                {"lossy-typical", K::Flag, "", "Medusa-2's typical acceptance instead of lossless verification"},
                {"posterior-threshold", K::Number, "0.09", "typical acceptance: epsilon"},
                {"posterior-alpha", K::Number, "0.3", "typical acceptance: delta (alpha)"},
                head_weights_option(), tree_option()}});
  r.push_back({"streaming", "Speculative Streaming (multi-stream attention)", "Bhendawade et al. 2024",
               MethodNeed::StreamingTarget,
               {{"gamma", K::Int, "", "streams per step (default: the model's streaming_config.json)"},
                {"stream-top-k", K::Int, "", "candidates per stream (default: the model's)"},
                {"msa-layers", K::Int, "", "layers with multi-stream attention (default: the trained value)"},
                {"prune-threshold", K::Number, "", "early-exit pruning threshold (default: calibrated; 0: off)"},
                {"total-tokens", K::Int, "", "tree nodes, the most probable paths of the k-ary tree first (default: "
                                              "the model's; 0: the whole tree)"},
                tree_option()}});
  r.push_back({"lookahead", "Lookahead decoding (Jacobi n-grams)", "Fu et al. 2024", MethodNeed::Nothing,
               {{"window", K::Int, "15", "W: Jacobi window"},
                {"ngram", K::Int, "5", "N: n-gram length"},
                {"guesses", K::Int, "15", "G: n-grams verified per step"},
                tree_option()}});
  r.push_back({"pld", "Prompt lookup (n-grams from the context)", "Saxena 2023, prompt lookup decoding",
               MethodNeed::Nothing,
               {{"max-ngram", K::Int, "3", "longest n-gram matched"},
                {"min-ngram", K::Int, "1", "shortest n-gram matched"},
                {"num-draft", K::Int, "10", "tokens drafted after a match"},
                tree_option()}});
  return r;
}

}  // namespace

const std::vector<MethodInfo>& method_registry() {
  static const std::vector<MethodInfo> registry = build();
  return registry;
}

const MethodInfo* find_method_info(const std::string& name) {
  for (const auto& m : method_registry())
    if (m.name == name) return &m;
  return nullptr;
}

std::vector<std::string> known_methods() {
  std::vector<std::string> out;
  for (const auto& m : method_registry()) out.push_back(m.name);
  return out;
}

const MethodInfo& method_info(const std::string& name) {
  if (const MethodInfo* m = find_method_info(name)) return *m;
  std::string all;
  for (auto& m : known_methods()) all += (all.empty() ? "" : ", ") + m;
  throw InputError("--method", "unknown method '" + name + "' (available: " + all + ")");
}

std::vector<std::string> all_option_keys() {
  std::vector<std::string> out;
  for (const auto& m : method_registry())
    for (const auto& o : m.options)
      if (std::find(out.begin(), out.end(), o.key) == out.end()) out.push_back(o.key);
  return out;
}

const MethodOption* find_option(const MethodInfo& m, const std::string& key) {
  for (const auto& o : m.options)
    if (o.key == key) return &o;
  return nullptr;
}

const char* need_key(MethodNeed need) {
  switch (need) {
    case MethodNeed::Nothing: return "";
    case MethodNeed::DraftModel: return "draft";
    case MethodNeed::EagleHead:
    case MethodNeed::Eagle3Head:
    case MethodNeed::MedusaHeads: return "head";
    case MethodNeed::StreamingTarget: return "model";
  }
  return "";
}

const char* need_description(MethodNeed need) {
  switch (need) {
    case MethodNeed::Nothing: return "nothing";
    case MethodNeed::DraftModel: return "a draft model with the target's vocabulary";
    case MethodNeed::EagleHead: return "an EAGLE-1/2 head";
    case MethodNeed::Eagle3Head: return "an EAGLE-3 head";
    case MethodNeed::MedusaHeads: return "Medusa heads";
    case MethodNeed::StreamingTarget: return "a Speculative Streaming model as its target";
  }
  return "";
}

}  // namespace specscope
