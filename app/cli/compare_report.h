#pragma once
// What `compare` prints (the table and verdict, or JSON), computed from per-run results, so that a recorded
// comparison replays to exactly the same report.
#include <string>
#include <vector>

#include "engine/methods/step_record.h"

namespace specscope::cli {

struct CompareRun {
  size_t prompt = 0, method = 0;  // indices into CompareReport::prompts / methods
  RunSummary summary;             // speedup_vs_vanilla filled against the same prompt's vanilla run
  bool identical = false;         // greedy output equal to vanilla's
  std::vector<StepRecord> steps;
};

struct CompareReport {
  std::string model, sampling;
  int max_tokens = 0;
  bool greedy = true;
  std::vector<std::string> methods;  // vanilla first
  std::vector<std::string> prompts;
  std::vector<CompareRun> runs;      // in the order they ran
};

// Prints the report to stdout; returns the command's exit code (1 when greedy outputs differ).
int print_compare_report(const CompareReport& report, bool json);

}  // namespace specscope::cli
