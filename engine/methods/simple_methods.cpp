#include "engine/methods/simple_methods.h"

#include <algorithm>

namespace specscope {

void PromptLookupMethod::draft(const DecodeState& st, DraftTree& tree, int budget) {
  const auto& t = st.tokens;
  const int len = int(t.size());
  const int want = std::min(o_.num_draft, budget);
  if (want <= 0) return;
  for (int n = std::min(o_.max_ngram, len - 1); n >= o_.min_ngram; --n) {
    // The suffix t[len-n, len) searched for right to left, so the most recent match wins.
    for (int start = len - n - 1; start >= 0; --start) {
      if (!std::equal(t.begin() + start, t.begin() + start + n, t.end() - n)) continue;
      const int from = start + n;
      const int count = std::min(want, len - from);
      if (count <= 0) continue;
      int parent = -1;
      for (int i = 0; i < count; ++i)
        parent = tree.add(parent, t[from + i], kNoValue, NodeSource::PromptLookup, n);
      return;
    }
  }
}

}  // namespace specscope
