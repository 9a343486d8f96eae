#include "runs/run_statistics.h"

#include <algorithm>
#include <cmath>

namespace specscope::runs {

namespace {

bool verified(const DraftNode& n) {
  return !n.pruned && (n.decision == NodeDecision::Accepted || n.decision == NodeDecision::Rejected);
}

}  // namespace

StepSpan clamp_span(StepSpan span, int step_count) {
  const int n = std::max(0, step_count);
  StepSpan out;
  out.first = std::clamp(span.first, 0, std::max(n, 1) - 1);
  out.last = span.last < 0 ? n - 1 : std::min(span.last, n - 1);
  return out;
}

std::vector<StepRecord> steps_in_span(const std::vector<StepRecord>& steps, StepSpan span) {
  const StepSpan s = clamp_span(span, int(steps.size()));
  if (s.last < s.first) return {};
  return std::vector<StepRecord>(steps.begin() + s.first, steps.begin() + s.last + 1);
}

RunStatistics compute_statistics(const std::vector<StepRecord>& steps, int calibration_bins) {
  return compute_statistics(steps, StepSpan{}, calibration_bins);
}

RunStatistics compute_statistics(const std::vector<StepRecord>& all_steps, StepSpan span, int calibration_bins) {
  RunStatistics st;
  const int n = int(all_steps.size());
  const StepSpan clamped = clamp_span(span, n);
  const int first = clamped.first, last = clamped.last;
  // summarize() takes a vector: a part of the run is copied, the whole run is not.
  std::vector<StepRecord> part;
  const bool whole = first == 0 && last == n - 1;
  if (!whole && last >= first) part.assign(all_steps.begin() + first, all_steps.begin() + last + 1);
  const std::vector<StepRecord>& steps = whole ? all_steps : part;

  // Acceptance by depth and τ: exactly the engine's definitions (summarize() skips the prefill and steps without
  // a tree contribute nothing to acceptance), so the view and the CLI's summary never disagree.
  const RunSummary summary = summarize("", steps);
  st.acceptance_by_depth = summary.acceptance_by_depth;
  st.tau = summary.tau;
  st.decoding_steps = summary.steps;

  const int bins = std::max(1, calibration_bins);
  st.calibration.resize(bins);
  for (int b = 0; b < bins; ++b) {
    st.calibration[b].lo = double(b) / bins;
    st.calibration[b].hi = double(b + 1) / bins;
  }
  std::vector<long> accepted_in_bin(bins, 0);
  std::vector<double> confidence_sum(bins, 0.0);

  double elapsed = 0;  // seconds of decoding steps so far
  double first_step_seconds = -1;
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepRecord& r = steps[i];
    if (r.root_token < 0) continue;  // the prefill step is not a decoding step

    // Time and throughput: every decoding step, tree or not.
    const int64_t total_us = r.timings.total_us();
    st.draft_seconds += r.timings.draft_us * 1e-6;
    st.verify_seconds += (r.timings.verify_forward_us + r.timings.verify_us) * 1e-6;
    st.other_seconds += r.timings.kv_update_us * 1e-6;
    if (total_us > 0) {
      const double secs = total_us * 1e-6;
      elapsed += secs;
      if (first_step_seconds < 0) first_step_seconds = elapsed;
      st.tokens_per_second.push_back(double(r.committed.size()) / secs);
      st.cumulative_seconds.push_back(elapsed - first_step_seconds);
      st.step_index.push_back(first + int(i));
    }

    if (r.nodes.empty()) continue;  // no tree (vanilla, or nothing to draft): time and throughput only

    const size_t acc = size_t(std::max(0, r.accepted_count()));
    if (st.accepted_length_histogram.size() <= acc) st.accepted_length_histogram.resize(acc + 1, 0);
    st.accepted_length_histogram[acc]++;

    for (const auto& n : r.nodes) {
      if (!verified(n) || !std::isfinite(n.draft_prob)) continue;
      const double p = std::clamp(double(n.draft_prob), 0.0, 1.0);
      const int b = std::min(bins - 1, int(p * bins));  // [lo, hi); 1.0 lands in the last bin
      st.calibration[b].nodes++;
      confidence_sum[b] += p;
      if (n.decision == NodeDecision::Accepted) accepted_in_bin[b]++;
    }
  }

  for (int b = 0; b < bins; ++b) {
    auto& bin = st.calibration[b];
    if (bin.nodes > 0) {
      bin.mean_confidence = confidence_sum[b] / double(bin.nodes);
      bin.acceptance = double(accepted_in_bin[b]) / double(bin.nodes);
    }
  }
  return st;
}

double compute_tokens_per_second(const std::vector<StepRecord>& steps) {
  int64_t us = 0;
  long tokens = 0;
  for (const auto& st : steps) {
    tokens += long(st.committed.size());
    if (st.root_token >= 0) us += st.timings.total_us();
  }
  return us > 0 ? double(tokens) / (double(us) * 1e-6) : 0.0;
}

ReplyPartStatistics reply_part_statistics(const std::vector<StepRecord>& steps, const std::vector<std::string>& pieces,
                                          const ReplyShape& shape) {
  std::vector<StepRecord> by_part[2];  // [0] reasoning, [1] answer
  ReplySplitter splitter(shape);
  for (size_t i = 0; i < steps.size() && i < pieces.size(); ++i) {
    const ReplyPart before = splitter.part();
    const std::vector<ReplySpan> spans = splitter.feed(pieces[i]);
    const ReplyPart part = spans.empty() ? before : spans.front().part;
    if (steps[i].root_token >= 0) by_part[part == ReplyPart::Reasoning ? 0 : 1].push_back(steps[i]);
  }
  auto figures = [](const std::vector<StepRecord>& s) {
    ReplyPartFigures f;
    if (s.empty()) return f;
    const RunStatistics st = compute_statistics(s);
    f.steps = st.decoding_steps;
    f.tau = st.tau;
    for (const auto& r : s) f.tokens += long(r.committed.size());
    f.tokens_per_second = compute_tokens_per_second(s);
    return f;
  };
  return {figures(by_part[0]), figures(by_part[1])};
}

}  // namespace specscope::runs
