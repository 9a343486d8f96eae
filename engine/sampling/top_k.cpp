#include "engine/sampling/top_k.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace specscope {

std::vector<int> top_k_indices(const float* v, int n, int k) {
  n = std::max(n, 0);
  k = std::clamp(k, 0, n);
  if (k == 0) return {};
  // A strict total order (value, then index), so the k selected and their order are unique: nth_element's
  // O(n) selection followed by sorting only the k gives exactly what a full stable sort would.
  auto before = [v](int a, int b) {
    const bool na = std::isnan(v[a]), nb = std::isnan(v[b]);
    if (na != nb) return nb;
    if (!na && v[a] != v[b]) return v[a] > v[b];
    return a < b;
  };
  if (k <= 32) {
    // Small k (draft trees, the why panel's top 5): one pass keeping the k best in order. Most elements lose to the
    // current k-th best at once, so this beats nth_element over an index array of the whole vocabulary (4x on
    // 4,096 entries); the order is the same strict one, so the result is identical.
    std::vector<int> best;
    best.reserve(size_t(k) + 1);
    for (int i = 0; i < n; ++i) {
      // Most entries are plainly below the current k-th best: one comparison rejects them (false for NaN on either
      // side, which then takes the full order below).
      if (int(best.size()) == k && (v[i] < v[best.back()] || !before(i, best.back()))) continue;
      best.insert(std::upper_bound(best.begin(), best.end(), i, before), i);
      if (int(best.size()) > k) best.pop_back();
    }
    return best;
  }
  std::vector<int> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  if (k < n) std::nth_element(idx.begin(), idx.begin() + k, idx.end(), before);
  idx.resize(k);
  std::sort(idx.begin(), idx.end(), before);
  return idx;
}

}  // namespace specscope
