#pragma once
// The one top-k selection used by the drafters (EAGLE trees, SpS tree branches, Medusa heads). Its order is
// part of the drafted trees, so it is fixed exactly: larger value first, equal values by lower index.
#include <vector>

namespace specscope {

// Indices of the k largest of v[0..n), in descending order of value, ties to the lower index. k is clamped
// to [0, n]. NaN ranks below every number (drafters never produce one; this only keeps the order strict).
std::vector<int> top_k_indices(const float* v, int n, int k);

}  // namespace specscope
