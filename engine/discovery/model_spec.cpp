#include "engine/discovery/model_spec.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>

#include "engine/discovery/hf_layout.h"
#include "engine/discovery/stores.h"
#include "engine/util/error.h"

namespace specscope::discovery {

namespace fs = std::filesystem;

namespace {

const std::pair<const char*, Source> kPrefixes[] = {
    {"ollama:", Source::Ollama}, {"hf:", Source::HfCache}, {"lmstudio:", Source::LmStudio}};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t at; (at = s.find(sep, start)) != std::string::npos; start = at + 1) out.push_back(s.substr(start, at - start));
  out.push_back(s.substr(start));
  return out;
}

// Store names are made of these; anything else (and "..") could step outside the store.
void check_component(const std::string& c, const std::string& spec, bool allow_space = false) {
  if (c.empty() || c == "." || c == "..") throw InputError(spec, "has an empty, '.' or '..' name component");
  for (unsigned char ch : c)
    if (!(std::isalnum(ch) || ch == '.' || ch == '_' || ch == '-' || ch == '+' || (allow_space && ch == ' ')))
      throw InputError(spec, std::string("has a character that no model store uses in names: '") + char(ch) + "'");
}

std::string roots_text(const std::vector<std::string>& roots) {
  std::string s;
  for (const auto& r : roots) s += (s.empty() ? "" : ", ") + r;
  return s.empty() ? "(no store folder: HOME is not set)" : s;
}

std::string resolve_ollama(const ModelSpec& s, const std::string& spec, const StoreRoots& roots) {
  for (const auto& root : roots.ollama) {
    const fs::path manifest = fs::path(root) / "manifests" / s.name / s.rev;
    std::error_code ec;
    if (fs::is_regular_file(manifest, ec)) return ollama_model_blob(root, manifest.string());
  }
  throw InputError(spec, "no such model in " + roots_text(roots.ollama) + " (looked for manifests/" + s.name + "/" +
                             s.rev + "; `specscope-cli models` lists what is there)");
}

// The snapshot a revision names: a ref's commit, a snapshot folder's own name, or a unique commit prefix.
fs::path snapshot_for(const fs::path& repo, const std::string& rev, const std::string& spec) {
  std::error_code ec;
  const fs::path snapshots = repo / "snapshots";
  std::string hash;
  if (std::ifstream ref(repo / "refs" / rev); ref && (ref >> hash) && fs::is_directory(snapshots / hash, ec))
    return snapshots / hash;
  if (rev.find('/') == std::string::npos && fs::is_directory(snapshots / rev, ec)) return snapshots / rev;
  std::vector<fs::path> matches;
  if (rev.size() >= 7)
    for (auto it = fs::directory_iterator(snapshots, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      if (it->path().filename().string().rfind(rev, 0) == 0) matches.push_back(it->path());
  if (matches.size() == 1) return matches.front();
  if (matches.size() > 1) throw InputError(spec, "revision '" + rev + "' matches several snapshots; give more of it");
  throw InputError(spec, "no snapshot for revision '" + rev + "' in " + repo.string() +
                             (rev == "main" ? " (refs/main is missing or names a snapshot that is not there)" : ""));
}

// The model a folder holds: itself (a Hugging Face folder), or its one .gguf file.
std::string model_in(const fs::path& dir, const std::string& spec, const std::string& with_file_hint) {
  std::error_code ec;
  if (fs::exists(dir / "config.json", ec) || fs::exists(dir / "adapter_config.json", ec)) return dir.string();
  const auto files = gguf_files_in(dir.string());
  if (files.size() == 1) return (dir / files.front()).string();
  if (files.empty()) throw InputError(spec, dir.string() + " holds no model (no config.json, no .gguf file)");
  throw InputError(spec, "holds " + std::to_string(files.size()) + " .gguf files; name one: " + with_file_hint + "/" +
                             files.front());
}

std::string in_folder(const fs::path& dir, const std::string& file, const std::string& spec) {
  const fs::path p = dir / file;
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(p, ec)) && !fs::exists(p, ec))
    throw InputError(spec, p.string() + " is a dangling link (its blob is missing: an interrupted download?)");
  if (!fs::exists(p, ec)) throw InputError(spec, "no file " + p.string());
  return p.string();
}

std::string resolve_hf(const ModelSpec& s, const std::string& spec, const StoreRoots& roots) {
  for (const auto& root : roots.hf) {
    const fs::path repo = fs::path(root) / cache_folder_of_repo_id(s.name);
    std::error_code ec;
    if (!fs::is_directory(repo, ec)) continue;
    const fs::path snap = snapshot_for(repo, s.rev.empty() ? "main" : s.rev, spec);
    if (!s.file.empty()) return in_folder(snap, s.file, spec);
    if (fs::is_symlink(fs::symlink_status(snap / "config.json", ec)) && !fs::exists(snap / "config.json", ec))
      throw InputError(spec, (snap / "config.json").string() + " is a dangling link (its blob is missing)");
    return model_in(snap, spec, "hf:" + s.name + (s.rev.empty() ? "" : "@" + s.rev));
  }
  throw InputError(spec, "not in the Hugging Face cache " + roots_text(roots.hf) + " (no " +
                             cache_folder_of_repo_id(s.name) + "; `specscope-cli models` lists what is there)");
}

std::string resolve_lmstudio(const ModelSpec& s, const std::string& spec, const StoreRoots& roots) {
  for (const auto& root : roots.lmstudio) {
    const fs::path repo = fs::path(root) / s.name;
    std::error_code ec;
    if (!fs::is_directory(repo, ec)) continue;
    if (!s.file.empty()) return in_folder(repo, s.file, spec);
    return model_in(repo, spec, "lmstudio:" + s.name);
  }
  throw InputError(spec, "no such model in " + roots_text(roots.lmstudio) + " (`specscope-cli models` lists what is there)");
}

}  // namespace

bool is_model_spec(const std::string& text) {
  for (const auto& [prefix, source] : kPrefixes)
    if (text.rfind(prefix, 0) == 0) return true;
  return false;
}

ModelSpec parse_model_spec(const std::string& text) {
  ModelSpec s;
  std::string rest;
  for (const auto& [prefix, source] : kPrefixes)
    if (text.rfind(prefix, 0) == 0) {
      s.source = source;
      rest = text.substr(std::string(prefix).size());
    }
  if (rest.empty()) throw InputError(text, "names no model (ollama:NAME[:TAG], hf:ORG/NAME[@REV], lmstudio:PUBLISHER/REPO)");
  if (s.source == Source::Ollama) {
    const auto colon = rest.rfind(':');
    const auto slash = rest.rfind('/');
    const bool tagged = colon != std::string::npos && (slash == std::string::npos || colon > slash);
    s.rev = tagged ? rest.substr(colon + 1) : "latest";
    auto parts = split(tagged ? rest.substr(0, colon) : rest, '/');
    if (parts.size() > 3) throw InputError(text, "expected ollama:NAME[:TAG] with NAME = model, user/model or host/user/model");
    if (parts.size() == 1) parts.insert(parts.begin(), "library");
    if (parts.size() == 2) parts.insert(parts.begin(), "registry.ollama.ai");
    for (const auto& p : parts) check_component(p, text);
    check_component(s.rev, text);
    s.name = parts[0] + "/" + parts[1] + "/" + parts[2];
    return s;
  }
  // hf:ORG/NAME[@REV][/FILE] and lmstudio:PUBLISHER/REPO[/FILE]
  auto parts = split(rest, '/');
  if (parts.size() < 2) throw InputError(text, s.source == Source::HfCache ? "expected hf:ORG/NAME[@REV][/FILE]"
                                                                           : "expected lmstudio:PUBLISHER/REPO[/FILE]");
  std::string repo = parts[1];
  if (s.source == Source::HfCache) {
    if (const auto at = repo.find('@'); at != std::string::npos) {
      s.rev = repo.substr(at + 1);
      repo = repo.substr(0, at);
      check_component(s.rev, text);  // nested refs (pr/1) are addressed by their commit instead
    }
  }
  check_component(parts[0], text);
  check_component(repo, text);
  s.name = parts[0] + "/" + repo;
  for (size_t i = 2; i < parts.size(); ++i) {
    check_component(parts[i], text, true);
    s.file += (s.file.empty() ? "" : "/") + parts[i];
  }
  return s;
}

std::string resolve_model_spec(const std::string& text, const StoreRoots& roots) {
  const ModelSpec s = parse_model_spec(text);
  std::string path;
  try {
    switch (s.source) {
      case Source::Ollama: path = resolve_ollama(s, text, roots); break;
      case Source::HfCache: path = resolve_hf(s, text, roots); break;
      case Source::LmStudio: path = resolve_lmstudio(s, text, roots); break;
    }
  } catch (const InputError& e) {
    if (e.where() == text) throw;
    throw InputError(text, e.what());  // what the user typed first, then the file that is wrong and why
  }
  spdlog::info("{} is {}", text, path);
  return path;
}

std::string resolve_model_arg(const std::string& text, const StoreRoots& roots) {
  return is_model_spec(text) ? resolve_model_spec(text, roots) : text;
}

}  // namespace specscope::discovery
