// specscope-cli models: every model the other local tools keep (Ollama, LM Studio, the Hugging Face hub cache),
// what it is, whether SpecScope loads it (and why not), what it would need in memory, and the drafters discovery
// paired with it. Read-only (engine/discovery/discovery.h). Broken store entries are one "warning:" line each on
// stderr (and a "problems" array in --json); they never stop the listing and never change the exit code.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "engine/discovery/discovery.h"
#include "engine/discovery/memory_estimate.h"
#include "engine/discovery/model_listing.h"

namespace specscope::cli {

namespace {

using namespace discovery;

std::string what(const Found& f) {
  switch (f.facts.kind) {
    case ModelKind::Eagle1Head: return "EAGLE-1/2 head";
    case ModelKind::Eagle3Head: return "EAGLE-3 head";
    case ModelKind::MedusaHead: return "Medusa head";
    case ModelKind::LoraAdapter: return "LoRA on " + f.facts.architecture;
    case ModelKind::Model: break;
  }
  return f.facts.architecture.empty() ? "?" : f.facts.architecture;
}

nlohmann::json model_json(const Discovery& d, size_t i) {
  const Found& f = d.models[i];
  const ModelFacts& x = f.facts;
  auto known = [](int v) { return v ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {{"source", source_name(f.source)},
                      {"name", f.name},
                      {"spec", f.spec},
                      {"path", f.path},
                      {"kind", kind_name(x.kind)},
                      {"format", x.format},
                      {"architecture", x.architecture},
                      {"parameters", x.parameters},
                      {"dtype", x.dtype},
                      {"size_bytes", x.size_bytes},
                      {"loads", x.loads()},
                      {"problem", x.loads() ? nlohmann::json(nullptr) : nlohmann::json(x.problem)},
                      {"hidden_size", known(x.hidden_size)},
                      {"vocab_size", known(x.vocab_size)},
                      {"layers", known(x.num_layers)},
                      {"context_length", known(x.max_context)},
                      {"notes", f.notes}};
  if (!x.is_head() && x.kv_dim) {
    const MemoryNeed need = model_memory(x, 0);
    j["memory"] = {{"context", default_context(x.max_context)}, {"weights_bytes", need.weights},
                   {"kv_cache_bytes", need.kv_cache}};
  }
  if (x.is_head()) {
    j["base_model"] = x.base_model.empty() ? nlohmann::json(nullptr) : nlohmann::json(x.base_model);
    j["pairing_note"] = f.pairing_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.pairing_note);
  }
  j["drafters"] = nlohmann::json::array();
  for (const Pairing* p : d.drafters_of(i)) {
    const Found& dr = d.models[p->drafter];
    j["drafters"].push_back({{"spec", dr.spec}, {"path", dr.path}, {"kind", kind_name(dr.facts.kind)},
                             {"methods", p->methods}, {"basis", p->basis}});
  }
  if (f.source == Source::Ollama) {
    nlohmann::json params = nullptr;
    if (!f.ollama_params.empty()) params = nlohmann::json::parse(f.ollama_params, nullptr, false);
    if (params.is_discarded()) params = f.ollama_params;  // shown as written when it is not JSON
    j["ollama"] = {{"template", f.ollama_template}, {"system", f.ollama_system}, {"params", params}};
  }
  return j;
}

void print_text(const Discovery& d) {
  if (d.models.empty()) {
    std::printf("no models found in the stores:\n");
    for (Source s : {Source::Ollama, Source::LmStudio, Source::HfCache})
      for (const auto& r : d.roots.of(s)) std::printf("  %-9s %s\n", source_name(s), r.c_str());
    return;
  }
  std::printf("%-9s %-44s %-20s %8s %-6s %10s  %s\n", "SOURCE", "NAME", "ARCHITECTURE", "PARAMS", "DTYPE", "SIZE",
              "LOADS");
  for (size_t i = 0; i < d.models.size(); ++i) {
    const Found& f = d.models[i];
    const ModelFacts& x = f.facts;
    std::printf("%-9s %-44s %-20s %8s %-6s %10s  %s\n", source_name(f.source), f.name.c_str(), what(f).c_str(),
                parameter_count_text(x.parameters).c_str(), x.dtype.c_str(), human_bytes(x.size_bytes).c_str(),
                x.loads() ? "yes" : ("no: " + x.problem).c_str());
    for (const Pairing* p : d.drafters_of(i)) {
      std::string methods;
      for (const auto& m : p->methods) methods += (methods.empty() ? "" : ",") + m;
      std::printf("          drafter for %s: %s (%s)\n", methods.c_str(), d.models[p->drafter].spec.c_str(),
                  p->basis.c_str());
    }
    if (!f.pairing_note.empty()) std::printf("          pairs with nothing: %s\n", f.pairing_note.c_str());
    for (const auto& n : f.notes) std::printf("          note: %s\n", n.c_str());
  }
  std::printf("%zu models; load one with --model SPEC, e.g. --model %s\n", d.models.size(), d.models.front().spec.c_str());
}

}  // namespace

int cmd_models(Args& args) {
  const bool json = args.has("--json");
  args.finish();
  const Discovery d = discover(StoreRoots::from_environment());
  if (json) {
    nlohmann::json j = {{"stores", {{"ollama", d.roots.ollama}, {"lmstudio", d.roots.lmstudio}, {"hf", d.roots.hf}}},
                        {"models", nlohmann::json::array()},
                        {"problems", nlohmann::json::array()}};
    for (size_t i = 0; i < d.models.size(); ++i) j["models"].push_back(model_json(d, i));
    for (const auto& p : d.problems)
      j["problems"].push_back({{"source", source_name(p.source)}, {"path", p.path}, {"problem", p.problem}});
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    print_text(d);
  }
  std::fflush(stdout);
  for (const auto& p : d.problems) std::fprintf(stderr, "warning: %s\n", p.line().c_str());
  return 0;
}

}  // namespace specscope::cli
