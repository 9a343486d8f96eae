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
  std::vector<int> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  if (k < n) std::nth_element(idx.begin(), idx.begin() + k, idx.end(), before);
  idx.resize(k);
  std::sort(idx.begin(), idx.end(), before);
  return idx;
}

}  // namespace specscope
