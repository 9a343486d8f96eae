#pragma once
// tokenizer.json "normalizer" section: NFC/NFD/NFKC/NFKD, Lowercase, Prepend, Replace, Strip, ByteLevel and
// Sequence, with the `tokenizers` crate's semantics.
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace specscope::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string s) const = 0;
};

// `path` names tokenizer.json in errors. Returns null for a JSON null.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, const std::string& path);

}  // namespace specscope::tok
