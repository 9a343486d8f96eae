#pragma once
// The hub cache's naming, shared by the walker (hf_cache.cpp) and the hf: model spec (model_spec.cpp).
#include <map>
#include <string>
#include <vector>

namespace specscope::discovery {

// "models--Qwen--Qwen2.5-0.5B" -> "Qwen/Qwen2.5-0.5B"; "" for anything that is not a model repo's folder.
std::string repo_id_of_cache_folder(const std::string& folder);
// "Qwen/Qwen2.5-0.5B" -> "models--Qwen--Qwen2.5-0.5B".
std::string cache_folder_of_repo_id(const std::string& repo_id);
// Every refs/<name> (nested names like pr/1 included) of a repo folder: commit hash -> ref name ("main" wins
// when several refs name one commit). Unreadable or malformed refs are skipped.
std::map<std::string, std::string> read_refs(const std::string& repo_folder);
// The .gguf files of a snapshot (relative paths, sorted), its top level and one folder down (quantization
// folders), vision projectors (mmproj*) left out.
std::vector<std::string> gguf_files_in(const std::string& snapshot);

}  // namespace specscope::discovery
