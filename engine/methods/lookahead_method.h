#pragma once
// Lookahead decoding (Fu et al. 2024): a Jacobi window of W columns and N-1 levels runs in the same target
// forward as verification. Each step every column advances one Jacobi iteration; the column trajectories
// give n-grams for a pool keyed by their first token (at most G per key; a re-seen n-gram moves to the end,
// the oldest is evicted). Up to G pooled n-grams starting with the root token are verified as a tree.
#include <deque>
#include <map>

#include "engine/methods/method.h"
#include "engine/sampling/rng.h"

namespace specscope {

struct LookaheadOptions {
  int window = 15;  // W  (llama.cpp's port; the official example uses 7)
  int ngram = 5;    // N
  int guesses = 15; // G
};

class LookaheadMethod final : public Method {
 public:
  explicit LookaheadMethod(LookaheadOptions o);
  std::string name() const override { return "lookahead"; }
  void prefill(const DecodeState& st, const ForwardOutput& out) override;
  void draft(const DecodeState& st, DraftTree& tree, int budget) override;
  void extra_rows(const DecodeState& st, ExtraRows& rows) override;
  void observe_extra(const DecodeState& st, const ForwardOutput& out, int first_row) override;
  void commit(const DecodeState& st, const ForwardOutput& out, const std::vector<int>& rows, int committed) override;
  size_t pool_size() const;

 private:
  void add_ngram(const std::vector<int32_t>& g);  // g has N tokens: key + N-1 followers

  LookaheadOptions o_;
  std::vector<std::vector<int32_t>> window_;  // [N-1][W]
  std::map<int32_t, std::deque<std::vector<int32_t>>> pool_;
  Rng rng_{12345};
  int vocab_ = 0;
};

}  // namespace specscope
