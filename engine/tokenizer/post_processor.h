#pragma once
// tokenizer.json "post_processor" section, for single sequences: TemplateProcessing, ByteLevel (a no-op
// for ids), RobertaProcessing / BertProcessing and Sequence. It runs only when special tokens are requested.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace specscope::tok {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual std::vector<int32_t> process(std::vector<int32_t> ids) const = 0;
  // Ids the processor puts before / after the sequence (to infer BOS/EOS when there is no config file).
  virtual std::vector<int32_t> prefix_ids() const { return {}; }
  virtual std::vector<int32_t> suffix_ids() const { return {}; }
};

std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j, const std::string& path);

}  // namespace specscope::tok
