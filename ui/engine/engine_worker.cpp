#include "ui/engine/engine_worker.h"

#include <QMetaType>

#include "engine/model/model.h"

Q_DECLARE_METATYPE(specscope::StepRecord)
Q_DECLARE_METATYPE(specscope::RunSummary)
Q_DECLARE_METATYPE(specscope::runs::Job)
Q_DECLARE_METATYPE(specscope::ui::LaneOutcome)
Q_DECLARE_METATYPE(specscope::runs::ContextUse)
Q_DECLARE_METATYPE(specscope::runs::StepCost)
Q_DECLARE_METATYPE(specscope::ReplyShape)

namespace specscope::ui {

namespace {

// A load reports every tensor (hundreds to thousands of them); the status bar needs a step per percent.
class LoadProgressSignal {
 public:
  explicit LoadProgressSignal(EngineWorker& w) : w_(w) {}
  void operator()(const std::string& path, uint64_t done, uint64_t total) {
    const int percent = total ? int(done * 100 / total) : 100;
    if (percent == last_percent_ && done != 0 && done != total) return;
    last_percent_ = percent;
    emit w_.modelLoadProgress(QString::fromStdString(path), qint64(done), qint64(total));
  }
  void restart() { last_percent_ = -1; }  // a job loads its targets one after the other

 private:
  EngineWorker& w_;
  int last_percent_ = -1;
};

// The runner's callbacks as the worker's signals. step() may come from a lane's own thread (interleaved races);
// emitting from there is safe, the connections to the UI are queued.
class SignalObserver : public runs::JobObserver {
 public:
  explicit SignalObserver(EngineWorker& w) : w_(w) {}
  void model_loading(const std::string& path) override {
    load_progress_.restart();
    emit w_.modelLoading(QString::fromStdString(path));
  }
  void model_load_progress(const std::string& path, uint64_t done, uint64_t total) override {
    load_progress_(path, done, total);
  }
  void model_loaded(const std::string& path, const Model& model) override {
    targets.push_back(path);  // the runner loads targets in the order it numbers them (RunKey::target)
    emit w_.modelLoaded(QString::fromStdString(path), QString::fromStdString(runs::describe_model(model)));
  }
  void run_started(const runs::RunKey& key, const std::string& label) override {
    if (key.reference()) emit w_.referenceStarted(key.target, target_path(key));
    else emit w_.laneStarted(key.lane, QString::fromStdString(label));
  }
  void context_fitted(const runs::RunKey& key, const runs::ContextUse& use) override {
    if (!key.reference()) emit w_.contextFitted(key.lane, use);
  }
  void reply_shaped(const runs::RunKey& key, const ReplyShape& shape) override {
    if (!key.reference()) emit w_.replyShaped(key.lane, shape);
  }
  bool step(const runs::RunKey& key, const StepRecord& step, const std::string& piece) override {
    if (!key.reference()) emit w_.stepReady(key.lane, step, QString::fromStdString(piece));
    return true;  // cancelling goes through JobRunner::cancel()
  }
  void run_finished(const runs::RunResult& run) override {
    if (run.key.reference()) {
      emit w_.referenceFinished(run.key.target, target_path(run.key), run.summary);
      return;
    }
    LaneOutcome outcome{run.summary, QString::fromStdString(run.gen.text), run.identical, run.key.target, run.context,
                        {}, 0, 0, run.reply_parts};
    if (run.tree) {
      outcome.tree_options = QString::fromStdString(runs::tree_options_text(run.tree->options));
      outcome.expected_speedup = run.tree->expected_speedup;
      outcome.expected_tokens_per_second = run.tree->expected_tokens_per_second;
    }
    emit w_.laneFinished(run.key.lane, outcome);
  }
  void tree_tuning(int lane, const std::string& label, const runs::TreeChoice* choice) override {
    emit w_.treeTuning(lane, QString::fromStdString(label), choice ? QString::fromStdString(choice->summary) : QString());
  }
  void recording_failed(const std::string& message) override {
    emit w_.recordingFailed(QString::fromStdString(message));
  }
 private:
  QString target_path(const runs::RunKey& key) const {
    return key.target < int(targets.size()) ? QString::fromStdString(targets[size_t(key.target)]) : QString();
  }
  EngineWorker& w_;
  std::vector<std::string> targets;
  LoadProgressSignal load_progress_{w_};
};

}  // namespace

EngineWorker::EngineWorker() = default;
EngineWorker::~EngineWorker() = default;

void EngineWorker::register_types() {
  qRegisterMetaType<specscope::StepRecord>("specscope::StepRecord");
  qRegisterMetaType<specscope::RunSummary>("specscope::RunSummary");
  qRegisterMetaType<specscope::runs::Job>("specscope::runs::Job");
  qRegisterMetaType<specscope::ui::LaneOutcome>("specscope::ui::LaneOutcome");
  qRegisterMetaType<specscope::runs::ContextUse>("specscope::runs::ContextUse");
  qRegisterMetaType<specscope::runs::StepCost>("specscope::runs::StepCost");
  qRegisterMetaType<specscope::ReplyShape>("specscope::ReplyShape");
}

void EngineWorker::loadModel(const QString& path) {
  try {
    LoadProgressSignal load_progress(*this);
    const auto model = cache_.get(
        path.toStdString(), [&](const std::string& p, bool done) { if (!done) emit modelLoading(QString::fromStdString(p)); },
        [&](const std::string& p, uint64_t done, uint64_t total) { load_progress(p, done, total); });
    last_loaded_ = path.toStdString();
    emit modelLoaded(path, QString::fromStdString(runs::describe_model(*model)));
  } catch (const std::exception& e) {
    // A folder that vanished between choosing it and loading it changes nothing else: the model loaded before is
    // still in the cache, and the message says so ("PATH: no such file or directory (BASE stays loaded)").
    std::string message = e.what();
    if (!last_loaded_.empty() && cache_.has(last_loaded_)) message += " (" + last_loaded_ + " stays loaded)";
    emit failed(QString::fromStdString(message));
  }
}

void EngineWorker::run(const runs::Job& job) {
  SignalObserver observer(*this);
  try {
    const runs::JobResult r = runner_.run(job, observer);
    if (!r.targets.empty()) last_loaded_ = r.targets.front().path;
    // A vanilla lane that served as its target's reference ran as a lane; name it as the reference too.
    for (int t = 0; t < int(r.targets.size()); ++t)
      if (r.targets[size_t(t)].reference_lane >= 0)
        if (const runs::RunResult* ref = r.find(0, -1, t))
          emit referenceFinished(t, QString::fromStdString(r.targets[size_t(t)].path), ref->summary);
    // The cost model's curve for each target (still loaded): cached after the first measurement. Not worth a
    // failed job: without it the statistics just leave the expected speedup out.
    if (!r.cancelled)
      for (const auto& t : r.targets) try {
          if (!cache_.has(t.path) || t.backend.empty()) continue;
          const Backend b = parse_backend(t.backend);
          emit stepCostReady(QString::fromStdString(t.path), runs::cached_step_cost(*cache_.get(t.path), b));
        } catch (const std::exception&) {
        }
    emit jobFinished(r.session_id, r.cancelled, QString::fromStdString(r.backend), QString::fromStdString(r.device));
  } catch (const std::exception& e) {
    emit failed(QString::fromStdString(e.what()));
    emit jobFinished(job.record ? job.record->session_id : 0, true, QString(), QString());
  }
}

}  // namespace specscope::ui
