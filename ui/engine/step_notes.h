#pragma once
// A session's notes (`specscope-cli sessions note ID TEXT`, one free-text field per session) split into the notes
// that belong to steps and the rest. A line that starts with "step N:" or "steps A-B:" (case does not matter; an
// en dash works too) belongs to those step numbers (the StepRecord's own, 0: the prefill, as the inspector's header
// counts them); every other line is about the session as a whole. The inspector shows a step's notes in its
// header and marks them on its timeline; presenter mode shows them large. Plain C++, no Qt.
#include <string>
#include <vector>

namespace specscope::ui {

struct StepNote {
  int first = 0, last = 0;  // step numbers, inclusive
  std::string text;
};

struct SessionNotes {
  std::string general;          // the lines about no step, joined with '\n'
  std::vector<StepNote> steps;  // in the order written
  // Every note on step number `step`, joined with '\n'; "" when none.
  std::string for_step(int step) const;
  bool empty() const { return general.empty() && steps.empty(); }
};

SessionNotes parse_session_notes(const std::string& notes);

}  // namespace specscope::ui
