#include "engine/sampling/sampler.h"

#include "engine/cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "engine/sampling/top_k.h"
#include "engine/util/error.h"

namespace specscope {

void SamplingParams::validate() const {
  if (!(temperature >= 0.f) || !std::isfinite(temperature)) throw InputError("--temperature", "must be >= 0");
  if (top_k < 0) throw InputError("--top-k", "must be >= 0");
  if (!(top_p > 0.f && top_p <= 1.f)) throw InputError("--top-p", "must be in (0, 1]");
  if (!(min_p >= 0.f && min_p < 1.f)) throw InputError("--min-p", "must be in [0, 1)");
}

std::string SamplingParams::describe() const {
  std::ostringstream s;
  if (greedy()) {
    s << "greedy";
  } else {
    s << "T=" << temperature;
    if (top_k) s << " top_k=" << top_k;
    if (top_p < 1.f) s << " top_p=" << top_p;
    if (min_p > 0.f) s << " min_p=" << min_p;
    s << " seed=" << seed;
  }
  return s.str();
}

int32_t argmax(const float* logits, int n) {
  int32_t best = 0;
  for (int i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

float Distribution::prob_of(int32_t id) const {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == id) return probs[i];
  return 0.f;
}

std::vector<float> softmax_probs(const float* logits, int n) {
  // The engine's vector softmax (engine/cpu/vec_math.h's exp): verification takes one per verified level for the
  // probabilities it records, and libm's scalar expf made that a visible share of a step on small models.
  std::vector<float> p(logits, logits + std::max(n, 0));
  if (n > 0) cpu::softmax(p.data(), n);
  return p;
}

Distribution process_logits(const float* logits, int n, const SamplingParams& p) {
  Distribution d;
  if (p.greedy()) {
    d.ids = {argmax(logits, n)};
    d.probs = {1.f};
    return d;
  }
  // Temperature-scaled log-probabilities, sorted descending (ties by lower id, for reproducible ties), in the one
  // order top_k_indices defines (a few linear passes over the vocabulary, not a comparison sort: this runs per token).
  std::vector<int> order;
  if (p.top_k > 0 && p.top_k < n) {
    order = top_k_indices(logits, n, p.top_k);
    // transformers keeps every token tied with the k-th logit (it masks logits < the k-th value). Those with a lower
    // id are already among the k; the rest follow in id order, as they would in the full order.
    const int last = order.back();
    const float kth = logits[last];
    for (int j = last + 1; j < n; ++j)
      if (logits[j] == kth) order.push_back(j);
  } else {
    order = top_k_indices(logits, n, n);
  }
  int keep = int(order.size());
  const double inv_t = 1.0 / double(p.temperature);
  const double mx = double(logits[order[0]]) * inv_t;
  std::vector<double> w(keep);
  double sum = 0;
  for (int i = 0; i < keep; ++i) sum += (w[i] = std::exp(double(logits[order[i]]) * inv_t - mx));
  for (auto& x : w) x /= sum;
  // top-p: keep the smallest prefix whose mass reaches top_p (at least one token), as transformers does
  // (it removes tokens whose cumulative mass, counted from the least likely, is <= 1 - top_p).
  if (p.top_p < 1.f) {
    double cum_from_low = 0;
    int cut = keep;
    for (int i = keep - 1; i >= 1; --i) {
      cum_from_low += w[i];
      if (cum_from_low <= 1.0 - double(p.top_p)) cut = i;
      else break;
    }
    keep = cut;
  }
  // min-p: drop tokens below min_p times the top probability.
  if (p.min_p > 0.f) {
    const double thr = double(p.min_p) * w[0];
    int cut = 1;
    while (cut < keep && w[cut] >= thr) ++cut;
    keep = cut;
  }
  double total = 0;
  for (int i = 0; i < keep; ++i) total += w[i];
  d.ids.assign(order.begin(), order.begin() + keep);
  d.probs.resize(keep);
  for (int i = 0; i < keep; ++i) d.probs[i] = float(w[i] / total);
  return d;
}

int32_t sample_from(const Distribution& d, Rng& rng) {
  double u = rng.uniform(), cum = 0;
  for (size_t i = 0; i < d.ids.size(); ++i) {
    cum += d.probs[i];
    if (u < cum) return d.ids[i];
  }
  return d.ids.back();  // rounding: the mass summed to slightly under 1
}

int32_t sample_token(const float* logits, int n, const SamplingParams& p, Rng& rng) {
  if (p.greedy()) return argmax(logits, n);
  return sample_from(process_logits(logits, n, p), rng);
}

}  // namespace specscope
