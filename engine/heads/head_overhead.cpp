#include "engine/heads/head_overhead.h"

#include "engine/heads/streaming_weights.h"
#include "engine/model/model.h"

namespace specscope {

std::vector<HeadOverhead> head_overheads(const Model& model, const StreamingWeights* streaming) {
  const auto& c = model.config();
  const uint64_t H = c.hidden_size, V = c.vocab_size, I = c.intermediate_size;
  const uint64_t q = uint64_t(c.num_heads) * c.head_dim, kv = uint64_t(c.num_kv_heads) * c.head_dim;
  std::vector<HeadOverhead> out;

  uint64_t G = 4, eta = 16, r = 8;
  std::string layout = "gamma 4, eta 16, pruning rank 8 (the recipe's defaults)";
  if (streaming) {
    const auto& s = streaming->config();
    G = s.num_streams, eta = s.stream_rank, r = s.prune_rank;
    layout = "this model's: gamma " + std::to_string(G) + ", eta " + std::to_string(eta) + ", pruning rank " +
             std::to_string(r) + "; LoRA merged into the weights";
  }
  out.push_back({"streaming", G * H + 2 * eta * H + 2 * r * H, "gamma*H + 2*eta*H + 2*r*H", layout});

  const uint64_t medusa_head = H * H + H + H * V;
  out.push_back({"medusa", 5 * medusa_head, "5 x (H^2 + H + H*V)", "5 heads x 1 ResBlock (Medusa-1 default)"});

  // One Llama decoder layer without input_layernorm: q,k,v,o + gate/up/down + post-attention norm.
  const uint64_t layer = H * q + 2 * H * kv + q * H + 3 * H * I + H;
  out.push_back({"eagle1/2", 2 * H * H + H + layer, "fc 2H^2 + H, one decoder layer",
                 "EAGLE-1 head (shares the embedding and LM head)"});

  // EAGLE-3: fc 3H -> H, a midlayer whose q/k/v read 2H, norms, its own LM head over the draft vocabulary.
  const uint64_t mid = 2 * H * q + 2 * 2 * H * kv + q * H + 3 * H * I + 3 * H;
  out.push_back({"eagle3", 3 * H * H + mid + H + V * H, "fc 3H^2, midlayer (q/k/v over 2H), norm, LM head V*H",
                 "full draft vocabulary (d2t/t2d add no parameters)"});
  return out;
}

}  // namespace specscope
