#include "engine/methods/factory.h"

#include <sstream>

#include "engine/methods/draft_model_method.h"
#include "engine/methods/eagle_method.h"
#include "engine/methods/lookahead_method.h"
#include "engine/methods/medusa_method.h"
#include "engine/methods/simple_methods.h"
#include "engine/methods/streaming_method.h"
#include "engine/model/model.h"
#include "engine/util/error.h"

namespace specscope {

namespace {

int opt_int(const MethodSpec& s, const std::string& key, int def) {
  auto it = s.options.find(key);
  if (it == s.options.end()) return def;
  char* end = nullptr;
  long v = std::strtol(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end) throw InputError("--" + key, "expected an integer, got '" + it->second + "'");
  return int(v);
}

float opt_float(const MethodSpec& s, const std::string& key, float def) {
  auto it = s.options.find(key);
  if (it == s.options.end()) return def;
  char* end = nullptr;
  float v = std::strtof(it->second.c_str(), &end);
  if (it->second.empty() || *end || !(v >= 0.f)) throw InputError("--" + key, "expected a non-negative number");
  return v;
}

// "as-loaded" (the default), "int8" or "int4": the form of a drafter's own weights (engine/cpu/weight_form.h).
cpu::WeightForm opt_weight_form(const MethodSpec& s, const std::string& key) {
  auto it = s.options.find(key);
  if (it == s.options.end()) return cpu::WeightForm::AsLoaded;
  const auto f = cpu::parse_weight_form(it->second);
  if (!f) throw InputError("--" + key, "expected as-loaded, int8 or int4, got '" + it->second + "'");
  return *f;
}

std::vector<int> opt_list(const MethodSpec& s, const std::string& key) {
  std::vector<int> out;
  auto it = s.options.find(key);
  if (it == s.options.end() || it->second.empty()) return out;
  std::stringstream ss(it->second);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end) throw InputError("--" + key, "expected comma-separated integers");
    out.push_back(int(v));
  }
  return out;
}

// Every option must be one the registry lists for the method: a typo or another method's option is an error,
// never silently ignored.
void check_options(const MethodSpec& spec) {
  const MethodInfo& info = method_info(spec.name);
  for (const auto& [key, value] : spec.options) {
    if (find_option(info, key)) continue;
    std::string takes;
    for (const auto& o : info.options) takes += (takes.empty() ? "" : ", ") + o.key;
    throw InputError("--" + key, "is not an option of " + spec.name + " (" +
                                     (takes.empty() ? std::string("it takes none") : "it takes " + takes) + ")");
  }
}

}  // namespace

std::unique_ptr<Method> make_method(const MethodSpec& spec, const Model& target) {
  check_options(spec);
  // tree=auto is resolved by the run library before a method is built (runs/tree_tuner.h): what reaches here
  // are sizes.
  if (auto it = spec.options.find("tree"); it != spec.options.end() && it->second != "published")
    throw InputError("--tree", it->second == "auto" ? "tree=auto is sized by the run library (run, compare, the app)"
                                                    : "expected auto or published, got '" + it->second + "'");
  if (spec.name == "vanilla") return std::make_unique<VanillaMethod>();
  if (spec.name == "pld") {
    PldOptions o;
    o.max_ngram = opt_int(spec, "max-ngram", o.max_ngram);
    o.min_ngram = opt_int(spec, "min-ngram", o.min_ngram);
    o.num_draft = opt_int(spec, "num-draft", o.num_draft);
    if (o.min_ngram < 1 || o.max_ngram < o.min_ngram) throw InputError("--max-ngram", "need 1 <= min-ngram <= max-ngram");
    if (o.num_draft < 1) throw InputError("--num-draft", "must be >= 1");
    return std::make_unique<PromptLookupMethod>(o);
  }
  if (spec.name == "sps") {
    if (spec.draft_path.empty()) throw InputError("--draft", "sps needs a draft model (--draft PATH)");
    SpsOptions o;
    o.gamma = opt_int(spec, "gamma", o.gamma);
    o.branching = opt_list(spec, "branching");
    o.weights = opt_weight_form(spec, "draft-weights");
    o.confidence_threshold = opt_float(spec, "confidence-threshold", o.confidence_threshold);
    return std::make_unique<DraftModelMethod>(Model::load(spec.draft_path), target, o);
  }
  if (spec.name == "eagle1" || spec.name == "eagle2" || spec.name == "eagle3") {
    if (spec.head_path.empty()) throw InputError("--head", spec.name + " needs a head directory (--head PATH)");
    auto head = EagleHead::load(spec.head_path, target, opt_weight_form(spec, "head-weights"));
    const bool is3 = head->kind() == EagleHead::Kind::Eagle3;
    if (spec.name == "eagle3" && !is3)
      throw InputError(spec.head_path, "is an EAGLE-1/2 head (fc over 2H); eagle3 needs an EAGLE-3 head");
    if (spec.name != "eagle3" && is3)
      throw InputError(spec.head_path, "is an EAGLE-3 head; use --method eagle3");
    EagleOptions o;
    o.dynamic = spec.name != "eagle1";
    o.total_tokens = opt_int(spec, "total-tokens", o.total_tokens);
    o.depth = opt_int(spec, "depth", o.depth);
    o.top_k = opt_int(spec, "draft-top-k", o.top_k);
    if (auto it = spec.options.find("tree-choices"); it != spec.options.end())
      o.static_tree = build_choice_tree(load_choices(it->second, "eagle1_mc_sim_7b_63"));
    return std::make_unique<EagleMethod>(spec.name, head, o);
  }
  if (spec.name == "medusa") {
    if (spec.head_path.empty()) throw InputError("--head", "medusa needs a head directory (--head PATH)");
    MedusaOptions o;
    if (auto it = spec.options.find("tree-choices"); it != spec.options.end())
      o.tree = build_choice_tree(load_choices(it->second, "medusa_mc_sim_7b_63"));
    if (spec.options.count("lossy-typical")) {
      TypicalAcceptance ta;
      ta.posterior_threshold = opt_float(spec, "posterior-threshold", ta.posterior_threshold);
      ta.posterior_alpha = opt_float(spec, "posterior-alpha", ta.posterior_alpha);
      o.typical = ta;
    }
    return std::make_unique<MedusaMethod>(MedusaHeads::load(spec.head_path, target, opt_weight_form(spec, "head-weights")),
                                          o);
  }
  if (spec.name == "streaming") {
    // The streams live in the fine-tuned model's own directory unless --head points elsewhere.
    const std::string dir = spec.head_path.empty() ? target.path() : spec.head_path;
    if (!StreamingWeights::present(dir))
      throw InputError(dir, "has no streaming_config.json: streaming needs a Speculative Streaming model "
                            "(e.g. --model assets/models/streaming; training/train_streaming.py makes one)");
    StreamingOptions o;
    o.streams = opt_int(spec, "gamma", 0);
    o.top_k = opt_int(spec, "stream-top-k", 0);
    o.msa_layers = opt_int(spec, "msa-layers", 0);
    o.prune_threshold = opt_float(spec, "prune-threshold", -1.f);
    o.total_tokens = opt_int(spec, "total-tokens", -1);
    if (spec.options.count("total-tokens") && o.total_tokens < 0)
      throw InputError("--total-tokens", "must be >= 0 (0: the whole k-ary tree)");
    return std::make_unique<StreamingMethod>(StreamingWeights::load(dir, target), o, target);
  }
  if (spec.name == "lookahead") {
    LookaheadOptions o;
    o.window = opt_int(spec, "window", o.window);
    o.ngram = opt_int(spec, "ngram", o.ngram);
    o.guesses = opt_int(spec, "guesses", o.guesses);
    return std::make_unique<LookaheadMethod>(o);
  }
  throw InputError("--method", "method '" + spec.name + "' is in the registry but the factory cannot build it");
}

}  // namespace specscope
