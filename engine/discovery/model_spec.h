#pragma once
// Model specs: names for models other tools keep, accepted wherever a model path is (--model, --draft, --head):
//   ollama:NAME[:TAG]                  TAG defaults to latest; NAME is "llama3" (the library), "user/model", or
//                                      "host/namespace/model" -> the manifest's model blob (a GGUF file)
//   hf:ORG/NAME[@REV][/FILE]           REV is a ref (default main) or a commit (at least 7 leading hex digits) in
//                                      the hub cache -> that snapshot folder, or FILE in it (GGUF repos)
//   lmstudio:PUBLISHER/REPO[/FILE]     -> the repo's .gguf file (FILE when it holds several), or its folder
// Resolution reads one manifest or a few folder names: no discovery scan, nothing written.
#include <string>

#include "engine/discovery/store_roots.h"

namespace specscope::discovery {

struct ModelSpec {
  Source source = Source::HfCache;
  std::string name;  // ollama: "registry/namespace/model"; hf: "org/name"; lmstudio: "publisher/repo"
  std::string rev;   // ollama: the tag; hf: the revision; lmstudio: ""
  std::string file;  // hf, lmstudio: a file inside; "" when not given
};

// Whether `text` starts with one of the prefixes above.
bool is_model_spec(const std::string& text);
// Throws InputError(text, ...) for a malformed spec (an empty or ".." component, a character no store uses).
ModelSpec parse_model_spec(const std::string& text);
// The path the loaders take. Throws InputError naming the spec and what is missing, in one line.
std::string resolve_model_spec(const std::string& text, const StoreRoots& roots);
// `text` resolved when it is a spec, else `text` unchanged (a path).
std::string resolve_model_arg(const std::string& text, const StoreRoots& roots);

}  // namespace specscope::discovery
