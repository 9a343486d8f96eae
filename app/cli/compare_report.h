#pragma once
// What `compare` prints (the table and verdict, or JSON), computed from per-run results, so that a recorded race
// replays to exactly the same report: the live command and `sessions replay` both build it with
// make_compare_report() from the same fields.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/methods/factory.h"
#include "engine/methods/step_record.h"
#include "engine/model/model.h"

namespace specscope::cli {

// One run as the report needs it (from the run library's result, or from a recorded run).
struct ReportRun {
  std::string prompt;
  std::string label;       // the lane's label; "vanilla" for a target's reference run
  MethodSpec method;
  ModelIdentity target;
  RunSummary summary;      // speedup_vs_vanilla against its own target's reference
  bool identical = false;  // greedy output equal to its target's reference
  std::vector<StepRecord> steps;
  // The lane's tree=auto choice as its run's summary records it ("tree_auto": options, expected_speedup, trials);
  // null when the lane's sizes were given.
  nlohmann::json tree_auto;
};

// One line of the table: a target's reference or a lane, over every prompt.
struct CompareRow {
  std::string label;
  MethodSpec method;
  ModelIdentity target;
  int target_index = 0;
  bool reference = false;  // the first vanilla row of its target: the others' speedups are against it
  nlohmann::json tree_auto;  // its runs' tree=auto choice (ReportRun::tree_auto), null when none
};

struct CompareRun {
  size_t prompt = 0, row = 0;
  RunSummary summary;
  bool identical = false;
  std::vector<StepRecord> steps;
};

struct CompareReport {
  std::string model, sampling;  // model: the first target's path
  std::string backend, device;  // where the runs ran (the recorded session's for a replay; empty if unknown)
  int max_tokens = 0;
  bool greedy = true;
  std::vector<ModelIdentity> targets;  // in the order the rows name them
  std::vector<CompareRow> rows;        // in the order their runs first appear
  std::vector<std::string> prompts;
  std::vector<CompareRun> runs;        // in the order they ran
};

CompareReport make_compare_report(const std::string& sampling, int max_tokens, bool greedy,
                                  std::vector<ReportRun> runs, std::string backend = {}, std::string device = {});
// Prints the report to stdout; returns the command's exit code (1 when greedy outputs differ).
int print_compare_report(const CompareReport& report, bool json);

}  // namespace specscope::cli
