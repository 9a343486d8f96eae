// Tokenizer::from_files: reads tokenizer.json (and tokenizer_config.json when present) and resolves the
// BOS/EOS/PAD/UNK tokens and whether encode() adds BOS.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/util/error.h"

namespace specscope {

namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, std::filesystem::exists(path) ? "cannot read file" : "file not found");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (text.empty()) throw InputError(path, "file is empty");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // a parse error, or a number too large for any type (out_of_range)
    throw InputError(path, std::string("invalid JSON: ") + e.what());
  }
}

// A special token entry in tokenizer_config.json: "<s>" or {"content": "<s>", ...}; null when absent.
std::optional<std::string> config_token(const nlohmann::json& cfg, const char* key, const std::string& path) {
  if (!cfg.contains(key) || cfg.at(key).is_null()) return std::nullopt;
  const auto& v = cfg.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v.at("content").is_string()) return v.at("content").get<std::string>();
  throw InputError(path, std::string("\"") + key + "\" is neither a string nor {\"content\": ...}");
}

}  // namespace

std::shared_ptr<Tokenizer> Tokenizer::from_files(const std::string& tokenizer_json_path,
                                                 const std::string& tokenizer_config_path) {
  const nlohmann::json root = read_json(tokenizer_json_path);
  std::shared_ptr<tok::HfTokenizer> tok;
  try {
    tok = std::make_shared<tok::HfTokenizer>(root, tokenizer_json_path);
  } catch (const nlohmann::json::exception& e) {
    // A field of an unexpected JSON type somewhere the section parsers do not check by hand.
    throw InputError(tokenizer_json_path, std::string("unexpected tokenizer.json content: ") + e.what());
  }

  // What encode(add_special=true) really does comes from the post-processor.
  std::vector<int32_t> prefix, suffix;
  if (const auto* post = tok->post_processor()) {
    prefix = post->prefix_ids();
    suffix = post->suffix_ids();
  }
  tok->add_bos = !prefix.empty();

  auto resolve = [&](const std::optional<std::string>& name, const std::string& what,
                     const std::string& cfg_path) -> std::optional<int32_t> {
    if (!name) return std::nullopt;
    const auto id = tok->piece_to_id(*name);
    if (!id) throw InputError(cfg_path, what + " \"" + *name + "\" is not in the tokenizer's vocabulary");
    return id;
  };

  const bool have_config = !tokenizer_config_path.empty() && std::filesystem::exists(tokenizer_config_path);
  if (have_config) {
    const nlohmann::json cfg = read_json(tokenizer_config_path);
    if (!cfg.is_object()) throw InputError(tokenizer_config_path, "top level is not a JSON object");
    tok->bos_id = resolve(config_token(cfg, "bos_token", tokenizer_config_path), "bos_token", tokenizer_config_path);
    tok->eos_id = resolve(config_token(cfg, "eos_token", tokenizer_config_path), "eos_token", tokenizer_config_path);
    tok->pad_id = resolve(config_token(cfg, "pad_token", tokenizer_config_path), "pad_token", tokenizer_config_path);
    tok->unk_id = resolve(config_token(cfg, "unk_token", tokenizer_config_path), "unk_token", tokenizer_config_path);
    if (cfg.contains("add_bos_token") && cfg.at("add_bos_token").is_boolean() &&
        cfg.at("add_bos_token").get<bool>() != tok->add_bos) {
      spdlog::warn("{}: add_bos_token is {} but the post-processor in {} {} BOS; encoding follows tokenizer.json",
                   tokenizer_config_path, cfg.at("add_bos_token").get<bool>(), tokenizer_json_path,
                   tok->add_bos ? "adds" : "does not add");
    }
  } else {
    // No config: BOS is what the template puts first; EOS the template's trailing token or a well-known name.
    if (!prefix.empty()) tok->bos_id = prefix.front();
    if (!suffix.empty()) tok->eos_id = suffix.back();
    for (const char* name : {"</s>", "<|endoftext|>", "<|end_of_text|>", "<|im_end|>", "<eos>"}) {
      if (tok->eos_id) break;
      tok->eos_id = tok->piece_to_id(name);
    }
  }
  if (!tok->unk_id && root.at("model").contains("unk_token") && root.at("model").at("unk_token").is_string())
    tok->unk_id = tok->piece_to_id(root.at("model").at("unk_token").get<std::string>());
  if (tok->add_bos && tok->bos_id && prefix.front() != *tok->bos_id)
    spdlog::warn("{}: the post-processor starts with token {} but bos_token is {}", tokenizer_json_path, prefix.front(),
                 *tok->bos_id);
  return tok;
}

}  // namespace specscope
