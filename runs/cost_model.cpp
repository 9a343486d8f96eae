#include "runs/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace specscope::runs {

std::string losing_term(double tau, double verify_ms, double draft_ms, double cost1_ms) {
  const double budget = tau * cost1_ms;
  if (draft_ms > verify_ms - cost1_ms)
    return "it loses on drafting: the drafter alone takes " +
           std::to_string(int(std::lround(budget > 0 ? draft_ms * 100 / budget : 0))) + "% of the time the step may take";
  return "it loses on verification: checking the tree costs more than the tokens it saves";
}

StepCostBreakdown step_breakdown(const StepRecord& step, const StepCost& cost) {
  StepCostBreakdown b;
  b.step = step.step;
  b.target_tokens = std::max(1, step.target_tokens);
  b.verify_ms = cost.at(b.target_tokens);
  b.draft_ms = double(step.timings.draft_us) / 1000.0;
  b.tokens = int(step.committed.size());
  b.expected_ms = b.verify_ms + b.draft_ms;
  b.vanilla_ms = b.tokens * cost.at(1);
  b.experts_per_layer = step.experts_per_layer;
  return b;
}

std::string describe_step(const StepCostBreakdown& b) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "verify %.1f ms (%d token%s) + draft %.1f ms for %d token%s; vanilla would take %.1f ms",
                b.verify_ms, b.target_tokens, b.target_tokens == 1 ? "" : "s", b.draft_ms, b.tokens,
                b.tokens == 1 ? "" : "s", b.vanilla_ms);
  std::string text = buf;
  if (std::isfinite(b.experts_per_layer)) {
    std::snprintf(buf, sizeof buf, "; the forward ran %.1f experts per layer", b.experts_per_layer);
    text += buf;
  }
  return text;
}

namespace {

// Least squares of drafting time on drafter forwards over the steps that drafted: time = a + b * forwards; the
// first forward costs a + b, each later one b. False when the steps cannot tell the two apart.
bool fit_draft_forwards(const std::vector<StepRecord>& steps, double* first_ms, double* later_ms) {
  double n = 0, sf = 0, sd = 0, sff = 0, sfd = 0;
  for (const auto& s : steps) {
    if (s.root_token < 0 || s.draft_forwards < 1) continue;
    const double f = s.draft_forwards, d = double(s.timings.draft_us) / 1000.0;
    n += 1, sf += f, sd += d, sff += f * f, sfd += f * d;
  }
  if (n < kMinStepsForForwardFit) return false;
  const double var = sff - sf * sf / n;
  if (var < 1e-9 * n) return false;  // every step with the same number of forwards
  const double b = (sfd - sf * sd / n) / var, a = (sd - b * sf) / n;
  if (!(b > 0) || !(a + b > 0)) return false;
  *first_ms = a + b;
  *later_ms = b;
  return true;
}

}  // namespace

RunCostModel model_run_cost(const std::vector<StepRecord>& steps, const StepCost& cost) {
  RunCostModel m;
  m.cost1_ms = cost.at(1);
  double accepted = 0, verify = 0, draft = 0, target = 0, measured = 0, experts = 0;
  int expert_steps = 0;
  bool timed = true;
  for (const auto& s : steps) {
    if (s.root_token < 0) continue;  // the prefill
    m.steps.push_back(step_breakdown(s, cost));
    const auto& b = m.steps.back();
    accepted += s.accepted_count() + 1;
    verify += b.verify_ms;
    draft += b.draft_ms;
    target += b.target_tokens;
    measured += double(s.timings.verify_forward_us) / 1000.0;
    timed = timed && s.timings.verify_forward_us > 0;
    if (std::isfinite(b.experts_per_layer)) {
      experts += b.experts_per_layer;
      ++expert_steps;
    }
    if (b.target_tokens > 1 || s.draft_tokens > 0 || !s.nodes.empty()) m.drafted = true;
  }
  if (m.steps.empty()) return m;
  const double n = double(m.steps.size());
  m.tau = accepted / n;
  m.mean_verify_ms = verify / n;
  m.mean_draft_ms = draft / n;
  m.mean_target_tokens = target / n;
  if (timed) {
    m.mean_measured_verify_ms = measured / n;
    m.verify_vs_curve = m.mean_verify_ms > 0 ? m.mean_measured_verify_ms / m.mean_verify_ms : 0;
  }
  if (expert_steps > 0) m.mean_experts_per_layer = experts / expert_steps;
  fit_draft_forwards(steps, &m.first_draft_forward_ms, &m.later_draft_forward_ms);
  const double step_ms = m.mean_verify_ms + m.mean_draft_ms;
  m.expected_speedup = step_ms > 0 && m.cost1_ms > 0 ? m.tau / (step_ms / m.cost1_ms) : 0;
  if (m.drafted && m.expected_speedup > 0) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "Expected %.2fx (tau %.2f per %.1f ms step against %.2f ms per vanilla token): ",
                  m.expected_speedup, m.tau, step_ms, m.cost1_ms);
    m.verdict = buf;
    if (m.expected_speedup < 1.0) {
      m.verdict += losing_term(m.tau, m.mean_verify_ms, m.mean_draft_ms, m.cost1_ms) + ".";
    } else {
      std::snprintf(buf, sizeof buf, "it wins, committing tau tokens in %.1f ms where vanilla takes %.1f ms.", step_ms,
                    m.tau * m.cost1_ms);
      m.verdict += buf;
    }
    if (m.verify_vs_curve >= kColdVerification) {
      std::snprintf(buf, sizeof buf,
                    " In this run the target's forwards took %.1f ms, %.2fx the curve's %.1f ms: the curve is timed "
                    "with the target alone, and between its forwards here the drafter ran while the target's weights "
                    "left the cache (bench --beside measures it).",
                    m.mean_measured_verify_ms, m.verify_vs_curve, m.mean_verify_ms);
      m.verdict += buf;
    }
    if (m.later_draft_forward_ms > 0 && m.first_draft_forward_ms >= kColdDrafter * m.later_draft_forward_ms) {
      std::snprintf(buf, sizeof buf,
                    " The drafter's first forward of a step took about %.2f ms and each one after it %.2f ms: the "
                    "target's forward pushes the drafter's weights out of the cache, and every step brings them back.",
                    m.first_draft_forward_ms, m.later_draft_forward_ms);
      m.verdict += buf;
    }
    if (std::isfinite(m.mean_experts_per_layer)) {
      std::snprintf(buf, sizeof buf,
                    " The target is a mixture of experts: a verification of %.1f tokens ran %.1f experts per layer, "
                    "where one token runs only those it picks. Every expert a row picks is read whole, so the "
                    "tree's cost grows with the experts its rows reach, not only with its tokens.",
                    m.mean_target_tokens, m.mean_experts_per_layer);
      m.verdict += buf;
    }
  }
  return m;
}

RunCostModel model_run_cost(const std::vector<StepRecord>& steps, StepSpan span, const StepCost& cost) {
  return model_run_cost(steps_in_span(steps, span), cost);
}

double reference_tokens_per_second(const RunSummary& summary) {
  const double speedup = summary.speedup_vs_vanilla;
  if (!std::isfinite(speedup) || speedup <= 0 || !(summary.tokens_per_second > 0)) return 0;
  return summary.tokens_per_second / speedup;
}

double measured_speedup(const std::vector<StepRecord>& steps, StepSpan span, double reference_tokens_per_second) {
  if (!(reference_tokens_per_second > 0)) return 0;
  return compute_tokens_per_second(steps_in_span(steps, span)) / reference_tokens_per_second;
}

}  // namespace specscope::runs
