// Parsing a family manifest (no file access but path resolution: fuzz/fuzz_family_manifest.cpp fuzzes it). Finding
// the one that applies to a target, and a discovered family where none does, is family_lookup.cpp.
#include "engine/model/family_manifest.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/methods/method_registry.h"
#include "engine/util/error.h"

namespace specscope {

namespace fs = std::filesystem;

namespace {

std::string resolve(const fs::path& dir, const std::string& rel) {
  fs::path p(rel);
  if (p.is_relative()) p = dir / p;
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return (ec ? p.lexically_normal() : c).string();
}

std::string option_text(const nlohmann::json& v, const std::string& file, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return nlohmann::json(v.get<double>()).dump();
  if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
  throw InputError(file, where + " must be a string, a number or a boolean");
}

}  // namespace

bool same_path(const std::string& a, const std::string& b) {
  std::error_code ec1, ec2;
  const fs::path ca = fs::weakly_canonical(a, ec1), cb = fs::weakly_canonical(b, ec2);
  if (ec1 || ec2) return fs::path(a).lexically_normal() == fs::path(b).lexically_normal();
  return ca == cb;
}

FamilyManifest FamilyManifest::parse(const std::string& text, const std::string& file) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, std::string("not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) throw InputError(file, "a family manifest must be a JSON object");
  if (!j.contains("specscope_family") || !j["specscope_family"].is_number_integer() || j["specscope_family"] != 1)
    throw InputError(file, "not a SpecScope family manifest (needs \"specscope_family\": 1)");
  if (!j.contains("target") || !j["target"].is_string() || j["target"].get<std::string>().empty())
    throw InputError(file, "needs \"target\": the folder or .gguf file of the target model");
  const fs::path dir = fs::path(file).parent_path();
  FamilyManifest m;
  m.file = file;
  m.target = resolve(dir, j["target"].get<std::string>());
  if (!j.contains("methods")) return m;
  if (!j["methods"].is_object()) throw InputError(file, "\"methods\" must be an object of method name -> entry");
  for (const auto& [name, e] : j["methods"].items()) {
    const MethodInfo* info = find_method_info(name);
    if (!info) throw InputError(file, "names an unknown method '" + name + "'");
    if (!e.is_object()) throw InputError(file, "the entry of '" + name + "' must be an object");
    const std::string wants = need_key(info->needs);
    FamilyEntry entry;
    for (const auto& [key, v] : e.items()) {
      const std::string where = "methods." + name + "." + key;
      if (key == "options") {
        if (!v.is_object()) throw InputError(file, where + " must be an object");
        for (const auto& [ok, ov] : v.items()) {
          if (!find_option(*info, ok)) throw InputError(file, where + ": '" + ok + "' is not an option of " + name);
          entry.options[ok] = option_text(ov, file, where + "." + ok);
        }
        continue;
      }
      if (key == "alternatives") {
        if (wants != "draft")
          throw InputError(file, where + ": only a draft model's entry (sps) lists alternatives to choose among");
        if (!v.is_array()) throw InputError(file, where + " must be an array of paths");
        for (const auto& a : v) {
          if (!a.is_string() || a.get<std::string>().empty()) throw InputError(file, where + ": each must be a path");
          entry.alternatives.push_back(resolve(dir, a.get<std::string>()));
        }
        continue;
      }
      if (key != "draft" && key != "head" && key != "model")
        throw InputError(file, where + ": unknown key (draft, head, model, alternatives or options)");
      // "model" is the method's own target wherever it is given: Speculative Streaming's model, or a fine-tune
      // trained with its drafter (Medusa-2's base and heads, beside "head").
      if (key != wants && key != "model")
        throw InputError(file, where + ": " + name + " needs " + need_description(info->needs) +
                                   (wants.empty() ? "" : " (key \"" + wants + "\")") + ", not a \"" + key + "\"");
      if (!v.is_string() || v.get<std::string>().empty()) throw InputError(file, where + " must be a path");
      const std::string path = resolve(dir, v.get<std::string>());
      (key == "draft" ? entry.draft : key == "head" ? entry.head : entry.model) = path;
    }
    if (!entry.alternatives.empty() && entry.draft.empty())
      throw InputError(file, "methods." + name + ".alternatives: alternatives to what? (no \"draft\")");
    // A model of its own is a drafter's target (it was trained with it): a method that drafts with nothing runs the
    // family's target, and a model without its drafter would leave the method with nothing to serve.
    if (!entry.model.empty() && wants.empty())
      throw InputError(file, "methods." + name + ".model: " + name + " runs the family's target; it takes no model");
    if (!entry.model.empty() && wants != "model" && entry.path_for(info->needs).empty())
      throw InputError(file, "methods." + name + ".model: a model of its own comes with the drafter trained for it "
                                 "(key \"" + wants + "\")");
    m.methods[name] = std::move(entry);
  }
  return m;
}

const std::string& FamilyEntry::path_for(MethodNeed need) const {
  static const std::string none;
  switch (need) {
    case MethodNeed::Nothing: return none;
    case MethodNeed::DraftModel: return draft;
    case MethodNeed::StreamingTarget: return model;
    case MethodNeed::EagleHead:
    case MethodNeed::Eagle3Head:
    case MethodNeed::MedusaHeads: return head;
  }
  return none;
}

const FamilyEntry* FamilyManifest::entry(const std::string& method) const {
  auto it = methods.find(method);
  return it == methods.end() ? nullptr : &it->second;
}

std::vector<std::string> FamilyManifest::servable_methods() const {
  std::vector<std::string> out;
  for (const auto& info : method_registry()) {
    if (info.needs == MethodNeed::Nothing) {
      out.push_back(info.name);
      continue;
    }
    const FamilyEntry* e = entry(info.name);
    if (e && !e->path_for(info.needs).empty()) out.push_back(info.name);
  }
  return out;
}

}  // namespace specscope
