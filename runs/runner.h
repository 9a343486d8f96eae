#pragma once
// Runs a Job: loads every distinct target once, builds each lane's method, runs each prompt's reference and
// lanes (sequentially or interleaved), fills each run's speedup and identical-output verdict against its own
// target's reference, records everything through the session writer, and reports each step and run to an
// observer. The CLI and the app are thin adapters over this.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/methods/step_record.h"
#include "engine/model/model.h"
#include "runs/context_fit.h"
#include "runs/job.h"
#include "runs/model_cache.h"
#include "runs/run_statistics.h"
#include "runs/tree_tuner.h"

#include <nlohmann/json.hpp>

namespace specscope::runs {

// Which run: a lane (lane >= 0) or a target's reference (lane == -1), for prompt `prompt`.
struct RunKey {
  int prompt = 0;
  int lane = -1;
  int target = 0;  // index into JobResult::targets
  bool reference() const { return lane < 0; }
};

struct TargetInfo {
  std::string path;
  ModelIdentity identity;
  std::string description;  // "llama · 8 layers · hidden 384 · 14.2M parameters · bf16"
  int reference_lane = -1;  // the vanilla lane that serves as this target's reference; -1: a run of its own
  // Where its runs ran (backend_for: a model only the CPU computes runs there under auto on a GPU host), e.g. "cpu",
  // "CPU (Intel Xeon ...)".
  std::string backend, device;
};

struct RunResult {
  RunKey key;
  std::string label;  // the lane's label, or "vanilla" for a reference run
  MethodSpec method;
  RunSummary summary;  // speedup_vs_vanilla against this target's reference (NaN for the reference itself)
  GenerateResult gen;
  std::vector<StepRecord> steps;
  ContextUse context;             // how the prompt went into the context (turns left out, room for the answer)
  ReplyShape reply;               // chat: how the model marks its reasoning in this reply (Plain otherwise)
  // A reasoning reply: its steps' figures while thinking and while answering (also in summary_json's "reply").
  std::optional<ReplyPartStatistics> reply_parts;
  std::optional<bool> identical;  // greedy: the same tokens as the target's reference
  int64_t run_id = 0;             // in the session store; 0 when not recorded
  std::optional<TreeChoice> tree;  // the size tree=auto chose for this lane, with its expected speedup
  nlohmann::json summary_json;     // the summary as recorded (sessions::run_summary_json, plus "tree_auto")
};

struct JobResult {
  std::vector<TargetInfo> targets;  // in the order the lanes first name them
  std::vector<RunResult> runs;      // per prompt: references first, then lanes in order
  int64_t session_id = 0;
  std::string backend, device;      // the first target's (as the session records), e.g. "cpu", "CPU (Intel Xeon ...)"
  bool cancelled = false;
  // Empty when every step was recorded; else one line naming the store, why recording stopped and, when a session
  // was begun, how many of this job's steps it keeps ("recording stopped: PATH: the disk ... is full (...); session 3
  // keeps 12 of this job's 40 steps").
  std::string recording_error;
  std::vector<Lane> lanes;          // the lanes as run: tree=auto replaced by the chosen sizes
  std::vector<std::optional<TreeChoice>> trees;  // per lane: what tree=auto chose
  // The run of (prompt, lane); lane -1 with `target` for a target's reference (the vanilla lane when it is one).
  const RunResult* find(int prompt, int lane, int target = 0) const;
};

// Everything is called on the thread that runs the job, or, in an interleaved race, on a run's own thread in that
// run's turn: never two calls at once.
class JobObserver {
 public:
  virtual ~JobObserver() = default;
  virtual void model_loading(const std::string& path) {}
  // During a load: weight bytes bound and checked so far of the total (LoadOptions::progress).
  virtual void model_load_progress(const std::string& path, uint64_t done, uint64_t total) {}
  virtual void model_loaded(const std::string& path, const Model& model) {}
  virtual void run_started(const RunKey& key, const std::string& label) {}
  // Right after run_started, before the first step: whether old turns were left out so the conversation fits,
  // and whether max_tokens is more than the context leaves (the answer then ends at "context").
  virtual void context_fitted(const RunKey& key, const ContextUse& use) {}
  // Right after context_fitted: how the reply will mark its reasoning (reply_parts.h), for whoever shows its text.
  // A harmony reply's pieces then carry its markers (GenerateOptions::keep_special_text).
  virtual void reply_shaped(const RunKey& key, const ReplyShape& shape) {}
  // Return false to stop the job.
  virtual bool step(const RunKey& key, const StepRecord& step, const std::string& piece) { return true; }
  virtual void run_finished(const RunResult& run) {}
  // At most twice a job: when recording first fails (said while the job goes on unrecorded), and at its end with
  // what the store keeps (the same line as JobResult::recording_error).
  virtual void recording_failed(const std::string& message) {}
  // tree=auto: before a lane's calibration starts (choice == nullptr) and once its size is chosen.
  virtual void tree_tuning(int lane, const std::string& label, const TreeChoice* choice) {}
};

class JobRunner {
 public:
  explicit JobRunner(ModelCache& cache) : cache_(cache) {}
  // Throws InputError for a bad job (a lane that cannot be built names its lane; a target folder that is gone, before
  // any loaded model is freed); recording failures never throw, they are reported (observer and
  // JobResult::recording_error) and the job goes on.
  JobResult run(const Job& job, JobObserver& observer);
  // Thread-safe; takes effect within one step, or within one decoder layer of a prompt's prefill.
  void cancel() { cancel_.store(true); }
  bool cancelled() const { return cancel_.load(); }

 private:
  ModelCache& cache_;
  std::atomic<bool> cancel_{false};
};

// Model description for status bars and reports ("llama · 8 layers · hidden 384 · 14.2M parameters · bf16").
std::string describe_model(const Model& model);

}  // namespace specscope::runs
