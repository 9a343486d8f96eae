#pragma once
// The engine on a worker thread: a thin Qt adapter over runs::JobRunner, the loop the CLI runs too. The UI
// posts a runs::Job (a chat turn: one lane, no reference; a race: 1-4 lanes, each with its own target); the
// worker runs it and turns the runner's observer callbacks into queued signals, so the UI thread never blocks.
// Reference runs (vanilla on a lane's target) get their own signals: they are not lanes. Speedups, verdicts,
// the recorded backend and device, and the recording itself all come from the runner.
#include <QObject>
#include <QString>
#include <optional>

#include "engine/methods/step_record.h"
#include "runs/job.h"
#include "runs/model_cache.h"
#include "runs/runner.h"
#include "runs/step_cost.h"

namespace specscope::ui {

// How a lane ended, as the runner judged it.
struct LaneOutcome {
  RunSummary summary;             // speedup_vs_vanilla against the lane's own target's reference
  QString text;
  std::optional<bool> identical;  // greedy with a reference: the same tokens as that reference
  int target = 0;                 // index into the job's targets (their order of first use)
  runs::ContextUse context;       // summary.stop_reason "context": the answer filled it
  // tree=auto (the CPU default): the sizes chosen for this machine and what the cost model expected of them.
  QString tree_options;           // e.g. "depth=3,draft-top-k=2,total-tokens=6"; empty: published sizes
  double expected_speedup = 0, expected_tokens_per_second = 0;
  // A reasoning reply: speculation while the model thought and while it answered (runs::reply_part_statistics).
  std::optional<runs::ReplyPartStatistics> reply_parts;
};

class EngineWorker : public QObject {
  Q_OBJECT
 public:
  EngineWorker();
  ~EngineWorker() override;
  void cancel() { runner_.cancel(); }  // thread-safe: stops the job in flight within one step
  static void register_types();  // qRegisterMetaType for the signal arguments, once

 public slots:
  void loadModel(const QString& path);  // warm the cache (the app opens on the default model)
  void run(const specscope::runs::Job& job);

 signals:
  void modelLoading(const QString& path);
  // During a load (from the worker thread, at most about a hundred times a load): weight bytes bound and checked.
  void modelLoadProgress(const QString& path, qint64 done, qint64 total);
  void modelLoaded(const QString& path, const QString& description);
  void laneStarted(int lane, const QString& label);
  // Before a lane's first step: old turns left out to fit the context, and the room left for the answer.
  void contextFitted(int lane, const specscope::runs::ContextUse& use);
  // Before a lane's first step: how its reply marks its reasoning (a chat with a reasoning model).
  void replyShaped(int lane, const specscope::ReplyShape& shape);
  void stepReady(int lane, const specscope::StepRecord& step, const QString& piece);
  void laneFinished(int lane, const specscope::ui::LaneOutcome& outcome);
  void referenceStarted(int target, const QString& target_path);
  // A reference run ended; for a vanilla lane that served as the reference, at the end of the job.
  void referenceFinished(int target, const QString& target_path, const specscope::RunSummary& summary);
  // After every run: where it ran ("cpu", "CPU (Intel Xeon ...)"), as the runner recorded it.
  void jobFinished(qint64 session_id, bool cancelled, const QString& backend, const QString& device);
  void failed(const QString& message);
  void recordingFailed(const QString& message);
  // tree=auto: a lane's tree being sized for this machine (summary empty), then the choice in one sentence.
  void treeTuning(int lane, const QString& label, const QString& summary);
  // After a job that decoded, before jobFinished: this machine's step-cost curve for each of its targets (measured
  // once per model and backend, then cached), for the cost model beside the statistics (runs/cost_model.h).
  void stepCostReady(const QString& target_path, const specscope::runs::StepCost& cost);

 private:
  runs::ModelCache cache_;  // used on the worker thread only: models stay loaded between jobs
  std::string last_loaded_;  // the target loaded last (worker thread), named when a newer choice fails to load
  runs::JobRunner runner_{cache_};
};

}  // namespace specscope::ui
