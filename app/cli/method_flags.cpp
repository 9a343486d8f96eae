#include "app/cli/method_flags.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/discovery/model_spec.h"
#include "engine/methods/method_registry.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"

namespace specscope::cli {

runs::LaneDefaults read_lane_defaults(Args& args, const std::string& target) {
  runs::LaneDefaults d;
  d.target = target;
  // Drafters may be model specs too (ollama:..., hf:..., lmstudio:...), like --model.
  const auto roots = discovery::StoreRoots::from_environment();
  d.draft = discovery::resolve_model_arg(args.get_or("--draft", ""), roots);
  d.head = discovery::resolve_model_arg(args.get_or("--head", ""), roots);
  for (const auto& info : method_registry())
    for (const auto& o : info.options) {
      const std::string flag = "--" + o.key;
      if (o.kind == OptionKind::Flag) {
        if (args.has(flag)) d.options[o.key] = "1";
      } else if (auto v = args.get(flag)) {
        d.options[o.key] = *v;
      }
    }
  return d;
}

void resolve_lane_specs(std::vector<runs::LaneRequest>& requests) {
  const auto roots = discovery::StoreRoots::from_environment();
  for (auto& r : requests)
    for (const char* key : {"model", "head", "draft"})
      if (auto it = r.keys.find(key); it != r.keys.end()) it->second = discovery::resolve_model_arg(it->second, roots);
}

runs::Lane read_single_lane(Args& args, const std::string& method, const std::string& target) {
  const auto defaults = read_lane_defaults(args, target);
  return runs::resolve_lanes({{method, {}, method}}, defaults).front();
}

std::string method_usage() {
  std::string out;
  for (const auto& info : method_registry()) {
    if (info.options.empty() && info.needs == MethodNeed::Nothing) continue;
    std::string line = "              " + info.name + ":";
    if (info.needs != MethodNeed::Nothing)
      line += info.needs == MethodNeed::StreamingTarget ? " (a streaming model as --model)"
                                                        : std::string(" --") + need_key(info.needs) + " PATH";
    for (const auto& o : info.options) {
      std::string flag = " [--" + o.key;
      if (o.kind != OptionKind::Flag) flag += " " + (o.default_value.empty() ? std::string("N") : o.default_value);
      flag += "]";
      if (line.size() + flag.size() > 110) {
        out += line + "\n";
        line = "               ";
      }
      line += flag;
    }
    out += line + "\n";
  }
  return out;
}

Backend read_backend(Args& args) { return parse_backend(args.get_or("--backend", "auto")); }

SamplingParams read_sampling(Args& args) {
  SamplingParams p;
  p.temperature = float(args.get_double("--temperature", 0.0));
  p.top_k = args.get_int("--top-k", 0);
  p.top_p = float(args.get_double("--top-p", 1.0));
  p.min_p = float(args.get_double("--min-p", 0.0));
  p.seed = uint64_t(args.get_int("--seed", 0));
  p.validate();
  return p;
}

static std::string checked_utf8(std::string text, const std::string& where) {
  if (auto bad = find_invalid_utf8(text); bad != std::string::npos)
    throw InputError(where, "invalid UTF-8 at byte " + std::to_string(bad));
  return text;
}

std::string read_prompt(Args& args) {
  auto prompt = args.get("--prompt");
  auto file = args.get("--prompt-file");
  if (prompt && file) throw InputError("--prompt", "give either --prompt or --prompt-file, not both");
  if (!prompt && !file) throw InputError("--prompt", "required (or --prompt-file)");
  if (prompt) return checked_utf8(*prompt, "--prompt");
  std::string text = checked_utf8(read_text_file(*file), *file);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

std::vector<std::string> read_prompts(Args& args) {
  auto prompt = args.get("--prompt");
  auto file = args.get("--prompt-file");
  if (prompt && file) throw InputError("--prompt", "give either --prompt or --prompt-file, not both");
  if (!prompt && !file) throw InputError("--prompt", "required (or --prompt-file)");
  if (prompt) return {checked_utf8(*prompt, "--prompt")};
  std::string text = checked_utf8(read_text_file(*file), *file);
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string line;
  int lineno = 0;
  while (std::getline(ss, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (line[0] == '{') {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception& e) {
        throw InputError(*file, "line " + std::to_string(lineno) + " is not valid JSON");
      }
      if (!j.contains("prompt") || !j["prompt"].is_string())
        throw InputError(*file, "line " + std::to_string(lineno) + " has no string \"prompt\" field");
      out.push_back(j["prompt"].get<std::string>());
    } else {
      out.push_back(line);
    }
  }
  if (out.empty()) throw InputError(*file, "holds no prompts");
  return out;
}

}  // namespace specscope::cli
