#pragma once
// The one forward primitive every decoding method uses: append n new tokens to a sequence's KV cache with
// explicit positions and an ancestor mask among them (tree attention), get logits and chosen hidden states,
// then keep only the accepted rows. Prefill is the same call with a causal mask.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace specscope {

// A hidden state to return besides the logits.
struct HiddenTap {
  enum Kind { FinalNorm, LayerInput } kind = FinalNorm;
  int layer = 0;  // for LayerInput: the residual stream entering this decoder layer (no norm applied)
  static HiddenTap final_norm() { return {FinalNorm, 0}; }
  static HiddenTap layer_input(int l) { return {LayerInput, l}; }
};

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;  // empty: n_past, n_past+1, ...
  // Row-major n x n: mask[i*n+j] != 0 when new token i attends to new token j (its ancestors and itself).
  // Every new token always attends to the whole cache. Empty: causal.
  std::vector<uint8_t> mask;
  // Rows whose logits are wanted; empty: all rows.
  std::vector<int> logit_rows;
  std::vector<HiddenTap> taps;

  static Batch causal(std::span<const int32_t> toks) {
    Batch b;
    b.tokens.assign(toks.begin(), toks.end());
    return b;
  }
  int size() const { return int(tokens.size()); }
};

struct ForwardOutput {
  int vocab = 0;
  int hidden = 0;
  std::vector<int> logit_rows;                // which batch rows `logits` holds, in order
  std::vector<float> logits;                  // logit_rows.size() x vocab
  std::vector<std::vector<float>> hiddens;    // per tap: n x hidden
  const float* row_logits(int i) const { return logits.data() + size_t(i) * size_t(vocab); }
};

// One sequence's state (KV cache, scratch) on one backend. Not thread-safe; one per lane.
class Context {
 public:
  virtual ~Context() = default;
  virtual void forward(const Batch& batch, ForwardOutput& out) = 0;
  // After forward(): keep these rows of the last batch (in the order given, e.g. an accepted root path),
  // drop the others. The cache then holds n_past_before + rows.size() entries.
  virtual void keep(std::span<const int> rows) = 0;
  // Drops cache entries from n_past on.
  virtual void truncate(int n_past) = 0;
  virtual int n_past() const = 0;
  virtual int n_ctx() const = 0;
  virtual std::string backend_name() const = 0;
  // Tokens processed by forward() since creation (for the StepRecord's counts).
  uint64_t forwards = 0, forward_tokens = 0;
};

}  // namespace specscope
