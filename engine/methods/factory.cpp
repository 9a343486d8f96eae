#include "engine/methods/factory.h"

#include <sstream>

#include "engine/methods/draft_model_method.h"
#include "engine/methods/simple_methods.h"
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

}  // namespace

std::vector<std::string> known_methods() { return {"vanilla", "sps", "pld"}; }

std::unique_ptr<Method> make_method(const MethodSpec& spec, const Model& target) {
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
    return std::make_unique<DraftModelMethod>(Model::load(spec.draft_path), target, o);
  }
  std::string all;
  for (auto& m : known_methods()) all += (all.empty() ? "" : ", ") + m;
  throw InputError("--method", "unknown method '" + spec.name + "' (available: " + all + ")");
}

}  // namespace specscope
