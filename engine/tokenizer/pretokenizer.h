#pragma once
// tokenizer.json "pre_tokenizer" section: ByteLevel, Split, Metaspace and Sequence, with the `tokenizers`
// crate's semantics. A pre-tokenizer turns each piece of text into smaller pieces the model encodes
// separately.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace specscope::tok {

struct PreToken {
  std::string text;
  // Whether the piece starts at byte 0 of the original input (Metaspace's prepend_scheme "first" needs it).
  bool at_origin = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void apply(std::vector<PreToken>& pieces) const = 0;
  virtual bool byte_level() const { return false; }  // maps bytes to GPT-2 characters
};

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j, const std::string& path);

}  // namespace specscope::tok
