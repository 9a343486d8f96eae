#pragma once
// tokenizer.json "decoder" section: ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace and Sequence.
// Like the crate, each decoder rewrites the list of token strings; the results are joined at the end.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace specscope::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  virtual bool byte_level() const { return false; }
  virtual bool byte_fallback() const { return false; }
};

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, const std::string& path);

}  // namespace specscope::tok
