#pragma once
// How many parameters each speculative method adds to a given model, by the published layouts (the
// Speculative Streaming paper's argument: gamma*H-sized stream embeddings against Medusa's H^2 + H*V per head).
// Computed from the model's sizes, so `specscope-cli info` and compare reports can show them for any model.
#include <cstdint>
#include <string>
#include <vector>

namespace specscope {

class Model;
class StreamingWeights;

struct HeadOverhead {
  std::string method;   // "streaming", "medusa", "eagle1/2", "eagle3"
  uint64_t parameters;  // extra parameters beyond the target model
  std::string formula;  // how, in the model's terms
  std::string layout;   // the configuration assumed
};

// `streaming`: the model's own streaming tensors when it has them (their exact sizes); otherwise the paper's
// sizes for this model are assumed (gamma 4, eta 16, pruning rank 8).
std::vector<HeadOverhead> head_overheads(const Model& model, const StreamingWeights* streaming = nullptr);

}  // namespace specscope
