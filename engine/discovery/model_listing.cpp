#include "engine/discovery/model_listing.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "engine/discovery/memory_estimate.h"
#include "engine/model/family_manifest.h"
#include "engine/util/ascii_case.h"
#include "engine/util/error.h"

namespace specscope::discovery {

namespace fs = std::filesystem;

namespace {

std::string what_of(const ModelFacts& f) {
  switch (f.kind) {
    case ModelKind::Eagle1Head: return "EAGLE-1/2 head";
    case ModelKind::Eagle3Head: return "EAGLE-3 head";
    case ModelKind::MedusaHead: return "Medusa head";
    case ModelKind::LoraAdapter: return "LoRA on " + f.architecture;
    case ModelKind::Model: break;
  }
  return f.architecture.empty() ? "?" : f.architecture;
}

// The row of one model, without its drafters. Memory is judged only for what could be a target.
ListedModel row_of(const std::string& name, const std::string& spec, const ModelFacts& f,
                   std::optional<uint64_t> available) {
  ListedModel m;
  m.name = name;
  m.spec = spec;
  m.path = f.path;
  m.what = what_of(f);
  m.parameters = f.parameters ? parameter_count_text(f.parameters) : "";
  m.dtype = f.dtype;
  m.size_bytes = f.size_bytes;
  m.size = human_bytes(f.size_bytes);
  if (!f.is_head() && f.kind != ModelKind::LoraAdapter && f.kv_dim) {
    const int n_ctx = default_context(f.max_context);
    const MemoryNeed need = model_memory(f, n_ctx, true);
    m.memory = "needs " + human_bytes(need.total()) + " (weights " + human_bytes(need.weights) + " + KV cache " +
               human_bytes(need.kv_cache) + " for " + std::to_string(n_ctx) + " tokens)";
    if (available && f.loads()) {
      const std::string shortfall = memory_shortfall(need, *available, n_ctx);
      if (!shortfall.empty()) m.why_not = "too large for this machine: " + shortfall;
    }
  }
  if (!f.loads()) m.why_not = f.problem;
  else if (f.is_head()) m.why_not = "a drafter, not a target: choose the model it drafts for";
  m.choosable = m.why_not.empty();
  return m;
}

void add_drafter(ListedModel& m, MethodNeed role, const std::string& name, const std::string& path,
                 const std::string& method, const std::string& basis) {
  for (auto& d : m.drafters)
    if (d.role == role && same_path(d.path, path)) {
      if (std::find(d.methods.begin(), d.methods.end(), method) == d.methods.end()) d.methods.push_back(method);
      return;
    }
  m.drafters.push_back({role, name, path, {method}, basis});
}

// The shipped base and the drafters its family.json names (a malformed manifest leaves it without drafters: the
// lane resolver reports it when a method needs one).
std::optional<ListedModel> shipped_row(const std::string& base, std::optional<uint64_t> available) {
  std::error_code ec;
  if (base.empty() || !fs::exists(base, ec)) return std::nullopt;
  ListedModel m;
  try {
    m = row_of(fs::path(base).lexically_normal().filename().string(), "", probe_model(base), available);
  } catch (const InputError& e) {
    spdlog::warn("model picker: the shipped model {} cannot be probed: {}", base, e.what());
    return std::nullopt;
  }
  try {
    if (const auto family = FamilyManifest::find_for(base))
      for (const auto& [method, entry] : family->methods) {
        const MethodInfo* info = find_method_info(method);
        if (!info || info->needs == MethodNeed::StreamingTarget || info->needs == MethodNeed::Nothing) continue;
        const std::string& path = entry.path_for(info->needs);
        if (!path.empty())
          add_drafter(m, info->needs, fs::path(path).filename().string(), path, method, "family.json");
      }
  } catch (const InputError& e) {
    spdlog::warn("model picker: {}", e.what());
  }
  return m;
}

const char* group_title(Source s) {
  switch (s) {
    case Source::Ollama: return "Ollama";
    case Source::LmStudio: return "LM Studio";
    case Source::HfCache: return "Hugging Face cache";
  }
  return "?";
}

}  // namespace

std::string parameter_count_text(uint64_t n) {
  char buf[32];
  if (n >= 1000000000ull) std::snprintf(buf, sizeof buf, "%.1fB", double(n) / 1e9);
  else if (n >= 1000000ull) std::snprintf(buf, sizeof buf, "%.1fM", double(n) / 1e6);
  else std::snprintf(buf, sizeof buf, "%.1fK", double(n) / 1e3);
  return buf;
}

std::vector<const ListedDrafter*> ListedModel::drafters_for(MethodNeed role) const {
  std::vector<const ListedDrafter*> out;
  for (const auto& d : drafters)
    if (d.role == role) out.push_back(&d);
  return out;
}

std::vector<ModelGroup> list_models(const Discovery& d, const std::string& shipped_base,
                                    std::optional<uint64_t> available) {
  std::vector<ModelGroup> groups;
  if (auto shipped = shipped_row(shipped_base, available)) groups.push_back({"Shipped with SpecScope", {*shipped}});
  for (Source s : {Source::Ollama, Source::LmStudio, Source::HfCache}) {
    ModelGroup g{group_title(s), {}};
    for (size_t i = 0; i < d.models.size(); ++i) {
      const Found& f = d.models[i];
      if (f.source != s) continue;
      ListedModel m = row_of(f.name, f.spec, f.facts, available);
      if (!f.pairing_note.empty() && f.facts.is_head()) m.why_not += " (it pairs with nothing here: " + f.pairing_note + ")";
      for (const Pairing* p : d.drafters_of(i)) {
        const Found& dr = d.models[p->drafter];
        for (const auto& method : p->methods)
          if (const MethodInfo* info = find_method_info(method))
            add_drafter(m, info->needs, dr.name, dr.path, method, p->basis);
      }
      g.models.push_back(std::move(m));
    }
    if (!g.models.empty()) groups.push_back(std::move(g));
  }
  return groups;
}

bool matches_query(const ListedModel& m, const std::string& query) {
  const std::string haystack = ascii_lower(m.name + "\n" + m.spec + "\n" + m.what + "\n" + m.dtype);
  std::istringstream words(ascii_lower(query));
  for (std::string w; words >> w;)
    if (haystack.find(w) == std::string::npos) return false;
  return true;
}

}  // namespace specscope::discovery
