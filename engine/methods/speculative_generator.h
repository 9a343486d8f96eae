#pragma once
// The decoding loop shared by every method: prefill, then per step draft -> one target forward over
// [root, tree] -> verify -> keep the accepted path's KV -> commit. Streams text and StepRecords.
#include <functional>

#include "engine/generate/generator.h"
#include "engine/methods/method.h"
#include "engine/methods/step_record.h"

namespace specscope {

// Called after each step with its record and the newly visible text. Return false to stop.
using StepCallback = std::function<bool(const StepRecord& rec, const std::string& text_piece)>;

struct SpeculativeResult {
  GenerateResult gen;
  std::vector<StepRecord> steps;
  RunSummary summary;
};

SpeculativeResult generate_speculative(const Model& model, Context& ctx, Method& method,
                                       const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                       const StepCallback& on_step = {});

}  // namespace specscope
