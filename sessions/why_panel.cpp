#include "sessions/why_panel.h"

#include <algorithm>
#include <cstdio>

namespace specscope::sessions {

namespace {

std::string default_show(std::string_view t) {
  std::string out = "\xE2\x80\x9C";  // “
  for (char c : t) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out + "\xE2\x80\x9D";  // ”
}

bool on_path(const StepRecord& s, int id) {
  return std::find(s.accepted_path.begin(), s.accepted_path.end(), id) != s.accepted_path.end();
}

// The accepted child of `parent`, or -1.
int accepted_child(const StepRecord& s, int parent) {
  for (int id : s.accepted_path)
    if (id >= 0 && id < int(s.nodes.size()) && s.nodes[size_t(id)].parent == parent) return id;
  return -1;
}

// The sibling tested right after `id` (verification tries a parent's children in id order), or -1.
int next_tested_sibling(const StepRecord& s, const DraftNode& n) {
  for (size_t i = size_t(n.id) + 1; i < s.nodes.size(); ++i) {
    const DraftNode& m = s.nodes[i];
    if (m.parent == n.parent && !m.pruned && !std::isnan(m.u)) return m.id;
  }
  return -1;
}

const char* rule_name(VerifyRule r) {
  switch (r) {
    case VerifyRule::Greedy: return "Greedy verification: the target's argmax against the drafted token";
    case VerifyRule::Sampled: return "Speculative sampling: accept with min(1, p/q), else draw from norm(max(p \xE2\x88\x92 q, 0))";
    case VerifyRule::Deterministic:
      return "A deterministically chosen draft (EAGLE-2's rule): accept with p(x), else zero x and renormalise";
    case VerifyRule::Typical: return "Typical acceptance (Medusa, lossy): p(x) against a threshold";
    case VerifyRule::Unrecorded: break;
  }
  return "Not recorded";
}

}  // namespace

std::string format_prob(double p) {
  if (std::isnan(p)) return "\xE2\x80\x94";  // —
  char buf[32];
  if (p == 0 || std::fabs(p) >= 1e-3) std::snprintf(buf, sizeof buf, "%.4f", p);
  else std::snprintf(buf, sizeof buf, "%.3g", p);
  return buf;
}

const WhyRow* WhyPanel::row(std::string_view key) const {
  for (const auto& r : rows)
    if (r.key == key) return &r;
  return nullptr;
}

std::string WhyPanel::text() const {
  std::string out = title + "\n" + rule + "\n";
  for (const auto& r : rows) out += r.label + ": " + r.value + "\n";
  out += verdict + "\n";
  auto bars = [&](const std::string& head, const std::vector<WhyBar>& list) {
    if (list.empty()) return;
    out += head + "\n";
    for (const auto& b : list) out += (b.marked ? "> " : "  ") + b.text + " " + format_prob(b.p) + "\n";
  };
  bars(top_k_title, top_k);
  bars(residual_title, residual);
  if (!missing.empty()) out += missing + "\n";
  return out;
}

namespace {

// How the node's verification went (explain_node adds what drafting decided).
WhyPanel explain_verification(const StepRecord& step, int id, const TokenShow& show) {
  WhyPanel w;
  if (id < 0 || id >= int(step.nodes.size())) {
    w.title = "No such node";
    w.verdict = "Step " + std::to_string(step.step) + " has no draft node " + std::to_string(id) + ".";
    return w;
  }
  const DraftNode& n = step.nodes[size_t(id)];
  const NodeDecision d = n.pruned ? NodeDecision::Pruned : n.decision;
  const std::string x = show(n.text);
  auto tok = [&](int32_t t, const std::string& text) { return show(text) + " #" + std::to_string(t); };
  auto add = [&](std::string key, std::string label, std::string value, double number = std::nan("")) {
    w.rows.push_back({std::move(key), std::move(label), std::move(value), number});
  };
  auto prob_row = [&](std::string key, std::string label, double v) {
    if (!std::isnan(v)) add(std::move(key), std::move(label), format_prob(v), v);
  };
  auto bars = [&](const std::vector<TokenProb>& list, int32_t marked) {
    std::vector<WhyBar> out;
    for (const auto& b : list) out.push_back({b.token, show(b.text), double(b.prob), b.token == marked});
    return out;
  };
  const std::string parent_text =
      n.parent >= 0 && n.parent < int(step.nodes.size()) ? show(step.nodes[size_t(n.parent)].text) : "the root";

  w.title = "Draft node " + std::to_string(n.id) + " \xC2\xB7 " + x;
  add("drafted", "drafted x", tok(n.token, n.text), n.token);
  prob_row("q", "q(x), drafter", n.draft_prob);
  prob_row("p", "p(x), target", n.target_prob);

  if (d == NodeDecision::Pruned) {
    w.rule = "Not verified";
    w.verdict = "Pruned before verification: the tree was cut to its budget, so the target never saw this token.";
    return w;
  }
  // Typical acceptance judges every node below a passing one, on the chosen path or not; the others were judged
  // only below the accepted path.
  if (n.parent >= 0 && !on_path(step, n.parent) && n.rule != VerifyRule::Typical) {
    w.rule = "Not verified";
    w.verdict = "Not reached: its parent " + parent_text +
                " was not accepted, so the target's prediction after it was never used.";
    return w;
  }
  w.rule = rule_name(n.rule);
  if (!n.target_top_k.empty()) {
    w.top_k_title = "The target's top " + std::to_string(n.target_top_k.size()) + " after " + parent_text +
                    (n.rule == VerifyRule::Greedy ? " (softmax)" : " (p, as sampled)");
    w.top_k = bars(n.target_top_k, n.token);
  }
  const char* outcome = d == NodeDecision::Accepted ? "accepted" : d == NodeDecision::Rejected ? "rejected" : "not tested";

  if (n.rule == VerifyRule::Unrecorded) {
    // A session recorded before schema 4: what it has, and what it lacks.
    prob_row("accept", "acceptance probability", n.accept_prob);
    add("outcome", "outcome", outcome);
    w.verdict = std::string(d == NodeDecision::NotReached ? "Not tested" : d == NodeDecision::Accepted ? "Accepted" : "Rejected") +
                (std::isnan(n.accept_prob) ? "." : " with acceptance probability " + format_prob(n.accept_prob) + ".");
    w.missing = "This session was recorded before SpecScope kept why each node was decided (session schema 4): "
                "the verification rule, the uniform draw u, the target's top 5 and the residual are not recorded.";
    return w;
  }

  if (n.rule == VerifyRule::Greedy) {
    if (n.target_top_k.empty()) {
      w.missing = "The target's top tokens are not recorded for this node.";
      add("outcome", "outcome", outcome);
      return w;
    }
    const TokenProb& best = n.target_top_k.front();
    add("argmax", "target's argmax", tok(best.token, best.text), best.token);
    add("outcome", "outcome", outcome);
    if (best.token == n.token && d == NodeDecision::Accepted) {
      w.verdict = "The target's argmax after " + parent_text + " is " + x + ", the drafted token: accepted.";
    } else if (best.token == n.token) {
      w.verdict = "The target's argmax is " + x + ", but an earlier sibling with the same token was accepted first.";
    } else {
      const int sib = accepted_child(step, n.parent);
      w.verdict = "The target's argmax after " + parent_text + " is " + show(best.text) + ", not the drafted " + x +
                  ": rejected. " +
                  (sib >= 0 ? "A sibling drafted it and was accepted." : "The target's token became the bonus.");
    }
    return w;
  }

  if (n.rule == VerifyRule::Typical) {
    prob_row("threshold", "threshold min(\xCE\xB5, \xCE\xB1\xC2\xB7" "exp(\xE2\x88\x92H(p)))", n.accept_prob);
    add("outcome", "outcome", outcome);
    const bool passed = n.target_prob > n.accept_prob;
    w.verdict = "p(x) = " + format_prob(n.target_prob) + (passed ? " > " : " \xE2\x89\xA4 ") + "threshold " +
                format_prob(n.accept_prob) + ": it " + (passed ? "passed" : "failed") +
                " (the threshold is the smaller of \xCE\xB5 and \xCE\xB1 times exp(\xE2\x88\x92" "entropy), so a confident "
                "target demands more). " +
                (!passed ? "Rejected."
                 : d == NodeDecision::Accepted ? "On the longest passing path: accepted."
                                               : "A longer passing path was chosen, so it was not committed.");
    return w;
  }

  // Sampled or Deterministic: one uniform draw against the acceptance probability.
  if (std::isnan(n.u)) {
    const int sib = accepted_child(step, n.parent);
    add("outcome", "outcome", outcome);
    w.verdict = sib >= 0 ? "Not tested: its sibling " + show(step.nodes[size_t(sib)].text) +
                               " was tried first and accepted."
                         : "Not tested.";
    return w;
  }
  const bool sampled = n.rule == VerifyRule::Sampled;
  const bool later = !std::isnan(n.tested_prob) && n.tested_prob != n.target_prob;
  // A later sibling meets what the earlier rejections left of p: p'(x), shown apart from the target's p(x).
  if (later) prob_row("tested_p", "p\xE2\x80\xB2(x) after rejections", n.tested_prob);
  const std::string p_used = later ? "p\xE2\x80\xB2(x)" : "p(x)";
  prob_row("accept", "accept with " + (sampled ? "min(1, " + p_used + "/q)" : p_used), n.accept_prob);
  prob_row("u", "uniform draw u", n.u);
  add("outcome", "outcome", outcome);
  const bool accepted = d == NodeDecision::Accepted;
  w.verdict = (sampled ? "Drawn from the drafter's q, so accepted with probability min(1, " + p_used + "/q) = min(1, " +
                             format_prob(later ? n.tested_prob : n.target_prob) + " / " + format_prob(n.draft_prob) + ")"
                       : "Chosen by the drafter's rule, not drawn from q, so accepted with probability " + p_used) +
              " = " + format_prob(n.accept_prob) + "; u = " + format_prob(n.u) + (accepted ? " < " : " \xE2\x89\xA5 ") +
              format_prob(n.accept_prob) + ": " + (accepted ? "accepted." : "rejected");
  if (accepted) return w;
  w.verdict += sampled ? ", and the target's p becomes the residual norm(max(p \xE2\x88\x92 q, 0))."
                       : ", so x is zeroed in p and p renormalised.";
  const int next = next_tested_sibling(step, n);
  const int end = step.accepted_path.empty() ? -1 : step.accepted_path.back();
  if (next >= 0) {
    w.verdict += " The next sibling, " + show(step.nodes[size_t(next)].text) + ", was tested against that.";
  } else if (n.parent == end && step.bonus_source == BonusSource::Residual) {
    w.verdict += " No sibling was left, so the target drew the bonus token from it.";
    add("drawn", "drawn from the residual", tok(step.bonus_token, step.bonus_text), step.bonus_token);
    prob_row("drawn_p", "its residual probability", step.bonus_prob);
    w.residual_title = sampled ? "Residual norm(max(p \xE2\x88\x92 q, 0)), top " + std::to_string(step.residual_top_k.size())
                               : "Residual (rejected drafts zeroed, renormalised), top " +
                                     std::to_string(step.residual_top_k.size());
    w.residual = bars(step.residual_top_k, step.bonus_token);
    if (step.residual_top_k.empty()) w.missing = "The residual's top tokens are not recorded for this step.";
  }
  return w;
}

}  // namespace

WhyPanel explain_node(const StepRecord& step, int id, const TokenShow& show_arg) {
  const TokenShow show = show_arg ? show_arg : TokenShow(default_show);
  WhyPanel w = explain_verification(step, id, show);
  if (id < 0 || id >= int(step.nodes.size())) return w;
  // SpS's confidence cut: a draft the drafter was unsure of ends its branch, so the tree is shorter than gamma here
  // by the drafter's choice, not by chance. Said for every such node, whatever verification then made of it.
  const DraftNode& n = step.nodes[size_t(id)];
  if (!std::isnan(step.draft_cut) && n.source == NodeSource::DraftModel && n.draft_prob < step.draft_cut) {
    w.rows.push_back({"cut", "confidence cut", format_prob(step.draft_cut), double(step.draft_cut)});
    w.verdict += " The drafter stopped this branch here: its q(x) = " + format_prob(n.draft_prob) +
                 " is below the confidence cut " + format_prob(step.draft_cut) +
                 " (sps:confidence-threshold), so nothing was drafted after " + show(n.text) +
                 " and the target verified a shorter chain.";
  }
  return w;
}

}  // namespace specscope::sessions
