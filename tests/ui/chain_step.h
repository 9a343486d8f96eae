#pragma once
// A step that accepted a chain of six drafts (depths 1-6, every tint of the provenance ramp) and its bonus token,
// for the GUI tests that feed the transcript steps by hand.
#include <QString>
#include <string>

#include "engine/methods/step_record.h"

namespace specscope::test {

inline StepRecord chain_step(int index) {
  StepRecord s;
  s.step = index;
  s.method = "eagle2";
  s.root_token = 1;
  for (int d = 1; d <= 6; ++d) {
    DraftNode n;
    n.id = d - 1;
    n.parent = d - 2;
    n.depth = d;
    n.token = 100 + d;
    n.text = " w" + std::to_string(d);
    n.draft_prob = 0.8f;
    n.target_prob = 0.9f;
    n.decision = NodeDecision::Accepted;
    s.nodes.push_back(n);
    s.accepted_path.push_back(n.id);
    s.committed.push_back(n.token);
  }
  s.bonus_token = 7;
  s.bonus_text = " b";
  s.committed.push_back(7);
  s.timings = {100, 400, 20, 10};
  return s;
}

// The text a chain step commits.
inline QString piece_of(const StepRecord& s) {
  std::string t;
  for (const auto& n : s.nodes) t += n.text;
  return QString::fromStdString(t + s.bonus_text);
}

}  // namespace specscope::test
