#pragma once
// A decoding method proposes a draft tree each step and learns what was committed. The runner
// (speculative_generator.h) owns the target forward, verification, KV updates and the StepRecords, so a
// method contains only what makes it different.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/methods/draft_tree.h"
#include "engine/methods/verify.h"
#include "engine/model/forward.h"
#include "engine/sampling/sampler.h"

namespace specscope {

class Model;

// What a method can see: the committed sequence (prompt + generated; its last token is the next root, not
// yet in the target's cache) and the sampling parameters drafters must apply identically.
struct DecodeState {
  const Model* target = nullptr;
  std::vector<int32_t> tokens;
  int prompt_tokens = 0;
  SamplingParams sampling;
  Rng* rng = nullptr;  // the run's generator, for drafters that sample
};

// Rows a method adds to the verification forward that are never kept or verified (Lookahead's Jacobi
// window). Row r sees the cache, the root (batch row 0), the extra rows listed in visible[r] (indices among
// the extra rows) and itself.
struct ExtraRows {
  std::vector<int32_t> tokens, positions;
  std::vector<std::vector<int>> visible;
  int size() const { return int(tokens.size()); }
};

class Method {
 public:
  virtual ~Method() = default;
  virtual std::string name() const = 0;
  // Hidden states of the target the method needs with every forward (EAGLE: final norm; EAGLE-3: three
  // layer inputs).
  virtual std::vector<HiddenTap> target_taps() const { return {}; }
  // After the prompt's forward (its outputs carry the taps for every prompt row).
  virtual void prefill(const DecodeState& st, const ForwardOutput& out) {}
  // Proposes the tree rooted at st.tokens.back(); `budget` caps the node count (context room).
  virtual void draft(const DecodeState& st, DraftTree& tree, int budget) = 0;
  // After verification: `rows` are the kept batch rows (root first, then the accepted path) and `out` the
  // verification forward's output (taps for every row). st.tokens already includes the committed tokens.
  virtual void commit(const DecodeState& st, const ForwardOutput& out, const std::vector<int>& rows,
                      int committed) {}
  // Lets a method add to a target forward (Speculative Streaming asks for its streams and for pruning): the
  // prompt's forward (tree == nullptr) and every verification forward (row_of_node: tree node -> batch row).
  virtual void shape_forward(const DecodeState& st, Batch& b, const DraftTree* tree,
                             const std::vector<int>* row_of_node) {}
  // Extra rows for this step's verification forward, and their logits afterwards (rows first_row.. of out).
  virtual void extra_rows(const DecodeState& st, ExtraRows& rows) {}
  virtual void observe_extra(const DecodeState& st, const ForwardOutput& out, int first_row) {}
  // Draft-side forwards and tokens since the last call (for the StepRecord).
  virtual std::pair<int, int> take_draft_counts() { return {0, 0}; }
  // Set when the method verifies with Medusa's typical acceptance instead of lossless verification.
  virtual std::optional<TypicalAcceptance> typical_acceptance() const { return std::nullopt; }
  bool lossy() const { return typical_acceptance().has_value(); }
  // The drafter's confidence below which a branch stops (StepRecord::draft_cut); NaN when the method has none.
  virtual float draft_cut() const { return kNoValue; }
};

}  // namespace specscope
