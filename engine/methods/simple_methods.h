#pragma once
// Methods that need no learned drafter: vanilla decoding and prompt-lookup (PLD) n-gram drafting.
#include "engine/methods/method.h"

namespace specscope {

// Autoregressive baseline: an empty tree, so every step forwards the root alone and commits one token.
class VanillaMethod final : public Method {
 public:
  std::string name() const override { return "vanilla"; }
  void draft(const DecodeState&, DraftTree&, int) override {}
};

// Prompt lookup decoding (Saxena 2023): find the earliest occurrence of the sequence's last n
// tokens (n from max_ngram down to min_ngram) and propose the tokens that followed it, as a chain.
struct PldOptions {
  int max_ngram = 3;
  int min_ngram = 1;
  int num_draft = 10;
};

class PromptLookupMethod final : public Method {
 public:
  explicit PromptLookupMethod(PldOptions o) : o_(o) {}
  std::string name() const override { return "pld"; }
  void draft(const DecodeState& st, DraftTree& tree, int budget) override;

 private:
  PldOptions o_;
};

}  // namespace specscope
