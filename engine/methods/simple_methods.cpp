#include "engine/methods/simple_methods.h"

#include <algorithm>

namespace specscope {

void PromptLookupMethod::draft(const DecodeState& st, DraftTree& tree, int budget) {
  const auto& t = st.tokens;
  const int len = int(t.size());
  const int want = std::min(o_.num_draft, budget);
  if (want <= 0) return;
  for (int n = std::min(o_.max_ngram, len - 1); n >= o_.min_ngram; --n) {
    // The suffix t[len-n, len) searched for left to right, so the earliest occurrence with a continuation wins, as in
    // Saxena's reference and transformers' PromptLookupCandidateGenerator (tests/pld_oracle_test.cpp). (The most
    // recent one drafted the same tau on the held-out prompts: 1.330 against 1.328 at 3 tokens, by replaying their
    // greedy outputs; following the reference is what decided it.)
    for (int start = 0; start + n < len; ++start) {
      if (!std::equal(t.begin() + start, t.begin() + start + n, t.end() - n)) continue;
      const int from = start + n;
      const int count = std::min(want, len - from);
      int parent = -1;
      for (int i = 0; i < count; ++i)
        parent = tree.add(parent, t[from + i], kNoValue, NodeSource::PromptLookup, n);
      return;
    }
  }
}

}  // namespace specscope
