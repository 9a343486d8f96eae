// probe_model for GGUF files: the metadata and tensor table, read by the same reader Model::load uses (so what
// it refuses here it would refuse there), with the tensors left unread in the mapping.
#include <filesystem>

#include "engine/discovery/probe_formats.h"
#include "engine/discovery/tokenizer_fingerprint.h"
#include "engine/formats/gguf.h"
#include "engine/formats/gguf_file_type.h"
#include "engine/model/gguf_model.h"
#include "engine/util/error.h"

namespace specscope::discovery {

ModelFacts probe_gguf(const std::string& path) {
  const GgufFile g = GgufFile::open(path);  // InputError for a truncated or malformed file
  ModelFacts f;
  f.path = path;
  f.format = "gguf";
  f.architecture = g.get_string("general.architecture", "");
  f.family = family_of(f.architecture);
  std::error_code ec;
  f.size_bytes = std::filesystem::file_size(path, ec);
  if (const int64_t parts = g.get_int("split.count", 1); parts > 1) {
    f.problem = "split into " + std::to_string(parts) + " files; SpecScope loads a model from one GGUF file";
  } else {
    f.problem = gguf_load_problem(g);
  }
  try {
    const ModelConfig c = config_from_gguf(g, g.find_tensor("output.weight") == nullptr);
    f.hidden_size = c.hidden_size;
    f.vocab_size = c.vocab_size;
    f.num_layers = c.num_layers;
    f.kv_dim = c.cache_key_dim();
    f.kv_value_dim = c.cache_value_dim();
    f.max_context = c.max_position_embeddings;
  } catch (const InputError&) {
    // Not a configuration SpecScope runs: gguf_load_problem already says why; the sizes stay unknown.
  }
  // Counted and named as load_gguf_model does (gguf_parameter_count), the file type as llama.cpp names it.
  f.parameters = gguf_parameter_count(g);
  for (const auto& t : g.tensors()) {
    // The loader reorders the rows of a "llama" file's Q and K projections into buffers of its own (gguf_model.h).
    const bool qk = t.name.find(".attn_q.") != std::string::npos || t.name.find(".attn_k.") != std::string::npos;
    if (f.architecture == "llama" && qk) f.copied_bytes += t.nbytes;
  }
  f.dtype = gguf_file_type_name(g);
  if (const GgufValue* tokens = g.find("tokenizer.ggml.tokens"); tokens && tokens->elem_type == GgufValueType::STRING)
    f.tokenizer_fingerprint = tokens_fingerprint(tokens->strings);
  return f;
}

}  // namespace specscope::discovery
