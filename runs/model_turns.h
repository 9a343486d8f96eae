#pragma once
// Two models taking turns on one machine, as a speculative step has them (the drafter's forwards, then the target's
// verification): what each forward costs in turns against alone, which the one-model step-cost curve cannot show
// (bench --beside). Two causes are told apart by a third figure:
// - the other model's footprint: where the caches and TLBs hold one model but not both, every switch starts on
//   the other model's leftovers;
// - time away: the target is also timed after an idle gap as long as the other model's forwards took, with nothing
//   of ours in between. On a machine whose last-level cache is shared with other tenants, what we do not touch is
//   evicted over time (bench/l3_decay.c; bench/results/l3_decay_2026-11-28.txt: an 8 MB buffer re-read at 97 GB/s
//   after up to 100 us untouched, 75 after 400 us, 46 after 800 us, 38 after 1.6 ms). On the development VM the gap
//   explained 84-95% of the cost in turns (bench/results/beside_gap_2026-11-28.txt).
#include <cstdint>
#include <vector>

#include "engine/model/forward.h"

namespace specscope::runs {

struct TurnStep {
  int tokens = 0;            // the target forward's new tokens
  double alone_ms = 0;       // median, the target alone (time_steps: warmed up)
  double in_turns_ms = 0;    // median, right after `other_forwards` forwards of the other model
  double other_in_turns_ms = 0;  // median of the other model's one-token forwards in these rounds
  // The same by place in the round: [0] the first after the target's forward, [1] the second, ... A drafter's first
  // forward of a step starts on the target's leftovers; the later ones show whether its own bytes stayed near.
  std::vector<double> other_by_position_ms;
  // Median, after the calling thread waited (spinning) as long as that round's forwards of the other model took,
  // right after the target's own forward: only time away, nothing else of ours in the caches.
  double after_gap_ms = 0;
};

struct ModelTurns {
  int other_forwards = 0;
  double other_alone_ms = 0;  // the other model's one-token forward alone (warmed up), median
  std::vector<TurnStep> steps;
};

// Both contexts must hold `target_base` / `other_base` tokens already; they are left that way. For each size in
// `sizes`: `rounds` rounds of `other_forwards` one-token forwards of `other` then one forward of `sizes[i]` tokens of
// `target`, each dropped again, then the idle gap and one more forward of `target` (after_gap_ms). Tokens are taken
// cyclically from each model's own `*_tokens`.
ModelTurns measure_model_turns(Context& target, const std::vector<int32_t>& target_tokens, int target_base,
                               Context& other, const std::vector<int32_t>& other_tokens, int other_base,
                               const std::vector<int>& sizes, int other_forwards = 3, int rounds = 200);

}  // namespace specscope::runs
