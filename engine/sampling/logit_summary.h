#pragma once
// What greedy verification reads from one row of the target's logits, without the row itself: the argmax, the
// softmax's top few and the probabilities of the tokens drafted there. A device backend computes these where the
// logits are (kernels/sampling.cu) and sends the host a few dozen bytes per row instead of the whole vocabulary
// (at a 128k vocabulary, 512 KB a row: a 64-row tree is 32 MB across PCIe a step). Plain data with no library
// types, so the CUDA kernel writes this very struct.
#include <cstdint>

namespace specscope {

// Bars the summary keeps: the why panel's top-k (engine/methods/step_record.h's kWhyTopK, checked in verify.cpp).
inline constexpr int kSummaryTopK = 5;

struct LogitSummary {
  int32_t argmax = -1;      // the largest logit, ties to the lower id (as torch.argmax)
  float argmax_prob = 0.f;  // its softmax probability at temperature 1
  int32_t top_count = 0;    // bars in top_ids / top_probs: the softmax's kSummaryTopK largest with p > 0
  int32_t top_ids[kSummaryTopK] = {};
  float top_probs[kSummaryTopK] = {};
};

// One row's summary from its logits on the host, and the softmax probability of each of the `n_probes` tokens in
// `probes` into probe_probs. Computes exactly what greedy verification computed from the row before summaries
// existed (the engine's vector softmax, argmax on the logits, top_k_indices on the probabilities), so a verification
// from summaries made here records the same bits as one from the logits.
void summarize_logits(const float* logits, int vocab, const int32_t* probes, int n_probes, LogitSummary& summary,
                      float* probe_probs);

}  // namespace specscope
