#include "engine/model/forward.h"

#include "engine/sampling/sampler.h"

namespace specscope {

const float* ForwardOutput::row_logits(int i) const {
  float* row = logits.data() + size_t(i) * size_t(vocab);
  if (fetch_row && !row_fetched[size_t(i)]) {
    fetch_row(i, row);
    row_fetched[size_t(i)] = 1;
  }
  return row;
}

Distribution ForwardOutput::row_distribution(int k, const SamplingParams& sp) const {
  Distribution d;
  // A row already here is processed here: nothing would cross either way.
  if (fetch_distribution && !(fetch_row && row_fetched[size_t(k)]) && fetch_distribution(k, sp, d)) {
    ++distributions_fetched;
    return d;
  }
  return process_logits(row_logits(k), vocab, sp);
}

int32_t ForwardOutput::row_argmax(int k) const {
  return summarized() ? summaries[size_t(k)].argmax : argmax(row_logits(k), vocab);
}

}  // namespace specscope
