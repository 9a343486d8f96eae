#pragma once
// Medusa's sparse trees sized for this machine (issue 22; the Medusa paper, section 3.3.2 "optimized tree
// construction"): each head's top-k accuracy is measured on calibration text, a path of ranks (r_1, ..., r_d) is
// expected to be accepted with probability prod_i acc[i][r_i], and the tree of N nodes with the most expected
// accepted tokens is the N paths of highest product (prefix-closed, since every factor is at most 1). The tuner
// (tree_tuner.h) then calibrates a few such trees of growing size and keeps the fastest.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model.h"

namespace specscope::runs {

// acc[h][r]: how often head h's rank-r candidate was the token h + 2 positions ahead, over the greedy continuations
// (new_tokens each) of `prompts`. k ranks per head.
std::vector<std::vector<double>> medusa_head_accuracies(const Model& target, const std::string& head_dir,
                                                        const std::vector<std::vector<int32_t>>& prompts,
                                                        int new_tokens = 48, int k = 10);
// The n paths (Medusa choice lists, ranks per depth) with the highest expected acceptance, parents first.
std::vector<std::vector<int>> medusa_sparse_tree(const std::vector<std::vector<double>>& acc, int n);
// Expected accepted drafts per step of a tree: the sum of its paths' products.
double medusa_expected_accepts(const std::vector<std::vector<double>>& acc, const std::vector<std::vector<int>>& tree);

}  // namespace specscope::runs
