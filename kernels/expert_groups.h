#pragma once
// A mixture-of-experts batch's picks grouped by expert (kernels/experts.cu's group_expert_picks; its reference in
// experts_ref.cpp), so that the picks of one expert (a verification's or a prefill's rows that chose it) read its
// weights once for up to kExpertGroupPicks of them. Plain C++: the references include it without CUDA.
//   order [picks]: the picks sorted by expert (within an expert in any order: no output depends on it);
//   groups [expert_groups_bound(picks, experts)]: in expert order, each expert's picks in runs of at most
//     kExpertGroupPicks {first index into order, count, expert}; the groups past the last count 0.
#include <cstdint>

namespace specscope::cuda {

inline constexpr int kExpertGroupPicks = 8;
// The most experts a layer may have: the grouping kernel keeps 4 ints an expert in one block's 48 KiB.
inline constexpr int kMaxGroupedExperts = 3072;

struct ExpertGroup {
  int32_t first, count, expert;
};

// Each expert holds ceil(c / 8) groups of its c picks: at most picks / 8 rounded up, plus one partial group per expert
// that has any.
inline int expert_groups_bound(int picks, int experts) {
  return (picks + kExpertGroupPicks - 1) / kExpertGroupPicks + (experts < picks ? experts : picks);
}

// What expert_products takes to read an expert once per group instead of once per pick.
struct ExpertGrouping {
  const int32_t* order = nullptr;
  const ExpertGroup* groups = nullptr;
  int bound = 0;  // expert_groups_bound of the batch
};

}  // namespace specscope::cuda
