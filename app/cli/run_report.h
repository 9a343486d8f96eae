#pragma once
// What `run` prints, as functions of recorded data, so that `sessions replay` prints exactly what the live
// run printed.
#include <nlohmann/json.hpp>
#include <string>

#include "engine/methods/step_record.h"
#include "runs/runner.h"

namespace specscope::cli {

// The line `run` prints to stderr after the text, from the summary sessions::run_summary_json makes.
std::string run_footer(const nlohmann::json& summary);
// One StepRecord as `run --json` prints it (one line).
std::string step_json_line(const StepRecord& rec);
std::string json_line(const nlohmann::json& j);
// What run and compare both show while a job runs: tree=auto on stderr ("[tree auto] lane 1 (sps): calibrating..."
// then the choice and its expected speedup).
class CliObserver : public runs::JobObserver {
 public:
  void tree_tuning(int lane, const std::string& label, const runs::TreeChoice* choice) override;
};

}  // namespace specscope::cli
