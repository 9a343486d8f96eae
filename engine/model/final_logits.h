#pragma once
// What the LM head's products go through before anything reads them as logits: Granite's division by logits_scaling
// and Gemma 2's soft cap, in that order (neither model has both). One place for every CPU path that projects hidden
// states onto the vocabulary (the forward, Speculative Streaming's pruning and its streams), so a draft's
// probabilities are the target's.
#include <cstdint>

#include "engine/model/config.h"

namespace specscope {

void finish_logits(const ModelConfig& c, float* logits, int64_t n);

}  // namespace specscope
