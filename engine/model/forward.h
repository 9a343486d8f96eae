#pragma once
// The one forward primitive every decoding method uses: append n new tokens to a sequence's KV cache with
// explicit positions and an ancestor mask among them (tree attention), get logits and chosen hidden states,
// then keep only the accepted rows. Prefill is the same call with a causal mask.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/sampling/logit_summary.h"
#include "engine/sampling/sampler.h"

namespace specscope {

class StreamingWeights;

// Speculative Streaming inside the target forward (Bhendawade et al., arXiv 2402.11131; cpu_streaming.cpp):
// gamma speculative streams for chosen rows through the top `msa_layers` layers (they attend to the main
// stream's keys/values and to their own lower streams, and never enter the KV cache), and early-exit pruning of
// tree rows after the pruning adapter's layer, before the streams start.
struct StreamingRequest {
  const StreamingWeights* weights = nullptr;
  int streams = 0;     // gamma
  int msa_layers = 0;  // Ns
  // Rows that get streams; empty: every row that survives pruning.
  std::vector<int> stream_rows;
  // Per row, its parent's row in the tree (-1: none, never pruned); empty: no pruning. A row is pruned when the
  // early-exit probability its parent gives its token is below `prune_threshold`, or its parent is pruned.
  std::vector<int> parent_row;
  float prune_threshold = 0.f;
};

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
  std::optional<StreamingRequest> streaming;
  // Greedy verification reads of each logit row only its summary (engine/sampling/logit_summary.h) and the
  // probabilities of the tokens drafted from it: with summaries_only, a backend that keeps its logits elsewhere
  // (CUDA) computes those there and may return ForwardOutput::summaries and probe_probs instead of `logits`. The
  // CPU backend has its logits in host memory already and returns them as always (verification then summarizes the
  // rows it visits, and only those). Probes of the k-th logit row: probe_tokens[probe_start[k], probe_start[k + 1]);
  // probe_start empty: no probes.
  bool summaries_only = false;
  std::vector<int32_t> probe_tokens;
  std::vector<int32_t> probe_start;
  // Sampled verification reads whole rows, but only those of the nodes it visits (about tau of a tree's rows):
  // with rows_on_demand a backend that keeps its logits elsewhere (CUDA) may leave them there and answer each
  // ForwardOutput::row_logits on its first use. The CPU backend returns them all, as always.
  bool rows_on_demand = false;

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
  // logit_rows.size() x vocab (may be empty with summaries). Read rows through row_logits(): with on-demand rows
  // (Batch::rows_on_demand) a row holds its values only once row_logits has fetched it (hence mutable: a cache).
  mutable std::vector<float> logits;
  // With Batch::summaries_only, from a backend that summarizes where its logits are: one summary per logit row
  // and the probes' probabilities, with the batch's probes they answer. Empty otherwise: then `logits` is full.
  std::vector<LogitSummary> summaries;
  std::vector<int32_t> probe_start, probe_tokens;  // Batch::probe_start / probe_tokens
  std::vector<float> probe_probs;                  // aligned with probe_tokens
  std::vector<std::vector<float>> hiddens;    // per tap: n x hidden
  // With Batch::streaming: which rows were pruned (1) inside the forward (their logits are NaN), the rows that
  // got streams, and the streams' final hidden states (after the final norm: the LM head's input),
  // stream_rows.size() x streams x hidden. Only the accepted row's streams are ever needed, so the LM head is
  // left to the caller (the vocabulary projection costs as much as a decoder layer per row).
  std::vector<uint8_t> pruned;
  std::vector<int> stream_rows;
  int streams = 0;
  std::vector<float> stream_hidden;
  // Set by a backend answering Batch::rows_on_demand: copies logit row k (vocab floats) to dst. Valid until the
  // context's next forward (the backend checks, and throws std::logic_error after it).
  std::function<void(int k, float* dst)> fetch_row;
  mutable std::vector<uint8_t> row_fetched;  // with fetch_row: which rows `logits` holds
  const float* row_logits(int i) const;
  // Also set by a backend answering Batch::rows_on_demand, when it can process a row where the logits are (CUDA's
  // kernels/processed_rows.cu): fills row k's process_logits(row, vocab, sp) and returns true, or returns false when
  // it cannot (the kept set is too large for it; the row is then fetched whole and processed here). What sampled
  // verification reads of a row is that distribution, so then only its kept tokens cross.
  std::function<bool(int k, const SamplingParams& sp, Distribution& d)> fetch_distribution;
  mutable int distributions_fetched = 0;  // how many rows fetch_distribution answered
  // Row k's processed distribution (process_logits), from fetch_distribution where it answers, else from its logits.
  Distribution row_distribution(int k, const SamplingParams& sp) const;
  // How many rows fetch_row has copied (what crossed).
  int rows_fetched() const { return int(std::count(row_fetched.begin(), row_fetched.end(), uint8_t(1))); }
  bool summarized() const { return !summaries.empty(); }
  // The k-th logit row's argmax, from its summary or its logits, whichever the backend returned.
  int32_t row_argmax(int k) const;
  // Clears what a previous forward left, for a batch with `taps` hidden-state taps.
  void reset(int vocab_size, int hidden_size, size_t taps) {
    vocab = vocab_size;
    hidden = hidden_size;
    hiddens.assign(taps, {});
    pruned.clear();
    stream_rows.clear();
    stream_hidden.clear();
    streams = 0;
    summaries.clear();
    probe_start.clear();
    probe_tokens.clear();
    probe_probs.clear();
    fetch_row = nullptr;
    row_fetched.clear();
    fetch_distribution = nullptr;
    distributions_fetched = 0;
  }
  // For a backend answering Batch::rows_on_demand: `rows` rows, none fetched yet, each copied by `fetch` on first use.
  void rows_fetched_by(int rows, std::function<void(int k, float* dst)> fetch) {
    logits.resize(size_t(rows) * size_t(vocab));
    row_fetched.assign(size_t(rows), 0);
    fetch_row = std::move(fetch);
  }
  // Stream j (0-based: it predicts the token j + 2 positions after the row) of the k-th row in stream_rows.
  const float* stream_row_hidden(int k, int j) const {
    return stream_hidden.data() + (size_t(k) * size_t(streams) + size_t(j)) * size_t(hidden);
  }
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
  // Mixture-of-experts models: the experts that computed at least one row, summed over expert layers and forwards
  // (what the experts' weights cost a forward: a verification batch reads every expert any of its rows picked).
  uint64_t experts_computed = 0;
  // experts_computed's growth since `before` per expert layer: the experts the forwards since then ran in each (the
  // StepRecord's experts_per_layer, bench's step profile). NaN for a model without expert layers.
  double experts_per_layer_since(uint64_t before, int expert_layers) const {
    return expert_layers > 0 ? double(experts_computed - before) / expert_layers
                             : std::numeric_limits<double>::quiet_NaN();
  }
};

}  // namespace specscope
