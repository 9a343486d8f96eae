#pragma once
// The median of a sample (0 for an empty one): how every benchmark here summarizes repeated runs.
#include <algorithm>
#include <vector>

namespace specscope {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace specscope
