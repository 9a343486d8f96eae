#pragma once
// What the "why" panel says about one draft node: the verification step that decided it, in the papers' terms,
// built from the StepRecord alone (live or replayed) as rows of numbers, a verdict, and bars (the target's top-k,
// the residual). Qt-free, so the app's panel (ui/inspector/why_panel.h), tools and tests read the same rows; the
// tests assert them against the verification code (engine/methods/verify.cpp).
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/methods/step_record.h"

namespace specscope::sessions {

struct WhyRow {
  // Stable names for tests and tools: drafted, q, p, tested_p, accept, u, outcome, argmax, threshold, drawn, cut.
  std::string key;
  std::string label;  // as shown: "q(x)", "min(1, p/q)", ...
  std::string value;  // as shown
  double number = std::nan("");  // the value as a number (a token id for drafted, argmax and drawn)
};

struct WhyBar {
  int32_t token = -1;
  std::string text;  // the token as shown
  double p = 0;
  bool marked = false;  // the node's own token (top-k), or the token drawn (residual)
};

struct WhyPanel {
  std::string title;  // "Draft node 7 · “harbor”"
  std::string rule;   // how its parent's children were verified: "Speculative sampling", ...
  std::vector<WhyRow> rows;
  std::string verdict;  // the decision and why
  std::string top_k_title;
  std::vector<WhyBar> top_k;  // the target's top-k at the node's parent
  std::string residual_title;
  std::vector<WhyBar> residual;  // on the rejection the bonus was drawn after: the residual's top-k
  std::string missing;  // what this session did not record, as a sentence; "" when nothing is missing

  const WhyRow* row(std::string_view key) const;  // nullptr when absent
  std::string text() const;                       // everything above as plain text, one item a line
};

// How a token's text is shown (the app passes its display_token, which makes whitespace visible); the default
// quotes it with newlines and tabs escaped.
using TokenShow = std::function<std::string(std::string_view)>;

// The panel for node `node` of `step` (an out-of-range id gives a panel that says so).
WhyPanel explain_node(const StepRecord& step, int node, const TokenShow& show = {});

// A probability as the panel prints it: 4 decimals, or 3 significant digits below 0.001; "—" for none.
std::string format_prob(double p);

}  // namespace specscope::sessions
