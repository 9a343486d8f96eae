#include "app/cli/method_flags.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"

namespace specscope::cli {

MethodSpec read_method_spec(Args& args, const std::string& name) {
  MethodSpec spec;
  spec.name = name;
  spec.draft_path = args.get_or("--draft", "");
  spec.head_path = args.get_or("--head", "");
  for (const char* opt : {"gamma", "branching", "max-ngram", "min-ngram", "num-draft", "total-tokens", "depth",
                          "draft-top-k", "tree-choices", "window", "ngram", "guesses", "posterior-threshold",
                          "posterior-alpha", "stream-top-k", "msa-layers", "prune-threshold"})
    if (auto v = args.get(std::string("--") + opt)) spec.options[opt] = *v;
  if (args.has("--lossy-typical")) spec.options["typical"] = "1";
  return spec;
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
