#pragma once
// Where an n-token step's time goes, against this machine's roofline: each kind of operation's milliseconds per
// forward, and for the matrix products and attention the time their multiply-adds and weight bytes would take at
// the machine's measured peak (engine/cpu/roofline.h). `bench` prints it for the step sizes verification uses.
#include <string>
#include <vector>

#include "engine/cpu/op_profile.h"
#include "engine/cpu/roofline.h"
#include "engine/model/backend.h"
#include "engine/model/model.h"

namespace specscope::runs {

struct OpCost {
  std::string op;
  double ms = 0;          // per forward
  double macs = 0;        // per forward
  double weight_bytes = 0;
  double bound_ms = 0;    // max(bytes / bandwidth, macs / path peak); 0 where no bound applies
  std::string bound_by;   // "memory" or "compute" or ""
};

struct StepProfile {
  int tokens = 0;
  double ms = 0;  // the whole forward, median
  std::vector<OpCost> ops;
  double bound_ms = 0;  // sum of the ops' bounds
  // The thread team per forward (medians): forks, and the time the calling thread waited at their joins for the
  // other threads' shares, which is inside the ops' times above.
  double forks = 0;
  double join_wait_ms = 0;
  // Mixture-of-experts models: how many experts an expert layer computed per forward (median; 0 for dense models).
  // The one-token step reads experts_per_token of them; n tokens read every expert any of them picked.
  double experts_per_layer = 0;
};

// Bytes of weights a one-token forward streams: every layer's matrices (of a mixture-of-experts layer, the router and
// experts_per_token experts) and the LM head.
size_t forward_weight_bytes(const Model& model);
// The roofline path the model's matrix products run on this CPU ("bf16 dot", "f32 fma", "int8 dot").
std::string linear_path(const Model& model);
// Profiles `repeat` forwards of each size in `sizes` at context `context` (CPU backend only: the per-operation
// timers live in the CPU forward), with the model's weights in `form` (engine/cpu/weight_form.h).
std::vector<StepProfile> profile_steps(const Model& model, const cpu::Roofline& roof, const std::vector<int>& sizes,
                                       int context, int repeat, cpu::WeightForm form = cpu::WeightForm::AsLoaded);

}  // namespace specscope::runs
