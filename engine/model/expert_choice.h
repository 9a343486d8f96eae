#pragma once
// The choice of a token's experts from its router probabilities, shared by the CPU's routing
// (engine/model/expert_routing.cpp) and the GPU's (kernels/experts.cu) so that the rule is written once. Plain C++ with
// SPEC_HD: nvcc compiles it for the device, a C++ compiler as an inline function.
#include "engine/util/host_device.h"

namespace specscope {

// The k most probable of `experts` probabilities p, by selection (k is 2-8 of 8-128 experts: fewer passes than a
// sort), ties to the lower index (as llama.cpp's argsort), into pick[0, k) in the order chosen; their probabilities
// into w, renormalized to sum to 1 when `normalize` (Mixtral, Qwen3-MoE's norm_topk_prob). A NaN never displaces a
// held expert.
SPEC_HD void choose_experts(const float* p, int experts, int k, bool normalize, int* pick, float* w) {
  for (int j = 0; j < k; ++j) {
    int best = -1;
    for (int e = 0; e < experts; ++e) {
      bool taken = false;
      for (int i = 0; i < j; ++i) taken = taken || pick[i] == e;
      if (taken) continue;
      if (best < 0 || p[e] > p[best]) best = e;
    }
    pick[j] = best;
    w[j] = p[best];
  }
  if (normalize) {
    float sum = 0.f;
    for (int j = 0; j < k; ++j) sum += w[j];
    for (int j = 0; j < k; ++j) w[j] /= sum;
  }
}

}  // namespace specscope
