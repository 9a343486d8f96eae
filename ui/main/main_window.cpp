#include "ui/main/main_window.h"


#include <QAction>
#include <QComboBox>
#include <QApplication>
#include <QCloseEvent>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFile>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPalette>
#include <QProgressBar>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QStatusBar>
#include <QStyle>
#include <QStyleFactory>
#include <QTabWidget>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>
#include <fstream>

#include "engine/methods/method_registry.h"
#include "runs/context_fit.h"
#include "runs/template_kwargs.h"
#include "engine/model/family_manifest.h"
#include "engine/util/error.h"
#include "sessions/export.h"
#include "sessions/html/html_export.h"
#include "sessions/reader.h"
#include "sessions/store_identity.h"
#include "sessions/summary_json.h"
#include "engine/model/backend.h"
#include "ui/main/live_pacer.h"
#include "ui/main/linked_views.h"
#include "ui/main/live_notes.h"
#include "ui/main/presenter_mode.h"
#include "ui/main/theme.h"
#include "ui/engine/step_focus.h"
#include "ui/engine/engine_worker.h"
#include "ui/engine/replay_controller.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/inspector/why_panel.h"
#include "ui/views/chat_view.h"
#include "ui/views/compare_view.h"
#include "ui/views/session_library_view.h"
#include "ui/views/settings_view.h"
#include "ui/views/statistics_view.h"

namespace specscope::ui {

namespace {

std::vector<runs::RunTrace> traces_for(const std::vector<runs::Lane>& lanes, bool greedy) {
  std::vector<runs::RunTrace> out;
  for (const auto& l : lanes) {
    runs::RunTrace t;
    t.method = l.method.name;
    t.label = l.label;
    t.target = l.target;
    t.greedy = greedy;
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<const runs::RunTrace*> pointers(const runs::TraceStore& store) {
  std::vector<const runs::RunTrace*> out;
  for (const auto& t : store.all()) out.push_back(&t);
  return out;
}

}  // namespace

struct MainWindow::State {
  QTabWidget* tabs;
  ChatView* chat;
  TreeInspectorWidget* inspector;
  CompareView* compare;
  StatisticsView* stats;
  SessionLibraryView* library;
  SettingsView* settings;
  ReplayController* replay;
  QWidget* replay_bar;
  QPushButton *play, *step_btn;
  QSlider* scrub;
  QDoubleSpinBox* speed;
  QLabel *replay_label, *model_label, *status_label;
  QComboBox* chat_method;
  QProgressBar* loading;
  QThread thread;
  EngineWorker* worker = nullptr;
  bool busy = false;
  enum class Job { None, Chat, Compare } job = Job::None;
  runs::TraceStore traces;  // the live job's lanes (chat: one) or the replayed session's; every view reads it
  QString model_description, device;  // the status bar's model part
  qint64 last_session = 0;
  bool job_failed = false;
  QString recording_note;  // this job's "Recording stopped: ..." line, the status bar's last word when it ends
  bool replay_answering = false;  // the chat shows a replayed answer that has not reached its end  // the worker reported an error for the job in flight (not a stop)
  QString loaded_model;     // the target last asked of the worker (Settings' model_path)
  QString reported_loaded;  // the model the worker last said it loaded (still in its cache when chosen again)
  runs::ContextUse chat_context;  // how the chat's last turn fitted the context
  std::optional<sessions::StoreIdentity> chat_store;  // the file the chat's session was recorded into
  LivePacer* pacer = nullptr;  // live steps to the text views at 15 Hz, to the trees within a CPU budget
  StepFocus* focus = nullptr;  // the linked views' one selection (ui/main/linked_views.h)
  PresenterMode* presenter = nullptr;
};

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent), s_(std::make_unique<State>()) {
  EngineWorker::register_types();
  setWindowTitle("SpecScope");
  resize(1400, 860);

  s_->tabs = new QTabWidget;
  // Chat: conversation on the left, the inspector on the right.
  s_->chat = new ChatView;
  s_->inspector = new TreeInspectorWidget;
  s_->inspector->setObjectName("treeInspector");
  auto* split = new QSplitter;
  split->addWidget(s_->chat);
  // The inspector with its "why" panel: the verification step behind the node clicked (ui/inspector/why_panel.h).
  auto* inspect = new QSplitter;
  inspect->addWidget(s_->inspector);
  auto* why = new WhyPanel;
  why->setObjectName("whyPanel");
  why->attach(s_->inspector);
  inspect->addWidget(why);
  inspect->setStretchFactor(0, 3);
  inspect->setStretchFactor(1, 1);
  split->addWidget(inspect);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  // A quick method switch above the chat (the same setting as in Settings).
  auto* chat_page = new QWidget;
  auto* chat_layout = new QVBoxLayout(chat_page);
  chat_layout->setContentsMargins(0, 0, 0, 0);
  auto* method_row = new QHBoxLayout;
  s_->chat_method = new QComboBox;
  for (auto& m : known_methods()) s_->chat_method->addItem(QString::fromStdString(m));
  method_row->addWidget(new QLabel(tr("Method:")));
  method_row->addWidget(s_->chat_method);
  method_row->addStretch(1);
  chat_layout->addLayout(method_row);
  chat_layout->addWidget(split, 1);
  s_->tabs->addTab(chat_page, tr("Chat"));
  s_->compare = new CompareView;
  s_->compare->setTraceStore(&s_->traces);
  s_->tabs->addTab(s_->compare, tr("Compare"));
  s_->stats = new StatisticsView;
  s_->tabs->addTab(s_->stats, tr("Statistics"));
  s_->library = new SessionLibraryView;
  s_->tabs->addTab(s_->library, tr("Sessions"));
  s_->settings = new SettingsView;
  s_->tabs->addTab(s_->settings, tr("Settings"));

  // The replay bar: shown while a recorded session is open.
  s_->replay = new ReplayController(this);
  s_->replay_bar = new QWidget;
  auto* rb = new QHBoxLayout(s_->replay_bar);
  s_->replay_label = new QLabel;
  s_->play = new QPushButton(tr("Play"));
  s_->step_btn = new QPushButton(tr("Step"));
  s_->scrub = new QSlider(Qt::Horizontal);
  s_->speed = new QDoubleSpinBox;
  s_->speed->setRange(0, 64);
  s_->speed->setValue(1);
  s_->speed->setSuffix("×");
  s_->speed->setSpecialValueText(tr("max"));
  auto* close_replay_button = new QPushButton(tr("Close replay"));
  rb->addWidget(s_->replay_label);
  rb->addWidget(s_->play);
  rb->addWidget(s_->step_btn);
  rb->addWidget(s_->scrub, 1);
  rb->addWidget(new QLabel(tr("speed")));
  rb->addWidget(s_->speed);
  rb->addWidget(close_replay_button);
  s_->replay_bar->hide();

  auto* central = new QWidget;
  auto* cv = new QVBoxLayout(central);
  cv->setContentsMargins(4, 4, 4, 4);
  cv->addWidget(s_->tabs, 1);
  cv->addWidget(s_->replay_bar);
  setCentralWidget(central);

  s_->model_label = new QLabel;
  s_->status_label = new QLabel;
  s_->loading = new QProgressBar;
  s_->loading->setRange(0, 0);
  s_->loading->setMaximumWidth(120);
  s_->loading->hide();
  statusBar()->addWidget(s_->status_label, 1);
  statusBar()->addPermanentWidget(s_->loading);
  statusBar()->addPermanentWidget(s_->model_label);

  // Live steps: the text at a steady pace, the trees as their CPU budget allows (ui/main/live_pacer.h).
  s_->pacer = new LivePacer([this](int lane, int i) { show_text(lane, i); },
                            [this](int lane, int i) { show_tree(lane, i); }, &TreeInspectorWidget::renderCpuMs, this);

  // The engine thread.
  s_->worker = new EngineWorker;
  s_->worker->moveToThread(&s_->thread);
  connect(&s_->thread, &QThread::finished, s_->worker, &QObject::deleteLater);
  s_->thread.start();

  connect(s_->worker, &EngineWorker::modelLoading, this, [this](const QString& p) {
    s_->loading->setRange(0, 0);  // busy until the weights report how far they are
    s_->loading->show();
    s_->status_label->setText(tr("Loading %1…").arg(p));
  });
  // A large model's weights take seconds to check: the bar shows how much of them is done.
  connect(s_->worker, &EngineWorker::modelLoadProgress, this, [this](const QString&, qint64 done, qint64 total) {
    s_->loading->setRange(0, 1000);
    s_->loading->setValue(total > 0 ? int(done * 1000 / total) : 1000);
    s_->loading->show();
  });
  connect(s_->worker, &EngineWorker::modelLoaded, this, [this](const QString& p, const QString& desc) {
    s_->reported_loaded = p;
    s_->loading->hide();
    s_->status_label->setText(tr("Loaded %1").arg(p));
    // The status bar names Settings' target; a race may load another (streaming's own) after it.
    if (s_->model_description.isEmpty() || same_path(p.toStdString(), s_->settings->settings().model_path.toStdString()))
      s_->model_description = desc;
    s_->model_label->setText(QString("%1 · %2").arg(s_->model_description, s_->device));
  });
  connect(s_->worker, &EngineWorker::failed, this, [this](const QString& m) {
    s_->loading->hide();
    report_error(m);
    if (s_->job == State::Job::Chat) {
      s_->job_failed = true;
      s_->chat->answerFailed(m);
    }
  });
  connect(s_->worker, &EngineWorker::contextFitted, this, [this](int lane, const runs::ContextUse& use) {
    if (s_->job == State::Job::Chat && lane == 0) {
      s_->chat_context = use;
      // A long prompt's prefill takes a while before the first token: say what is being read (Stop interrupts it).
      if (use.prompt_tokens >= 1024 && s_->traces.lanes() > 0)
        s_->status_label->setText(tr("Running %1 on a prompt of %2 tokens…")
                                      .arg(QString::fromStdString(s_->traces.lane(0).label))
                                      .arg(use.prompt_tokens));
      if (use.dropped_messages > 0)
        s_->chat->markContextCut(use.dropped_messages, QString::fromStdString(runs::trimmed_note(use)));
    }
    // Said before the answer streams, not discovered when it stops.
    if (use.max_tokens_beyond()) s_->status_label->setText(tr("Note: %1").arg(QString::fromStdString(runs::max_tokens_note(use))));
  });
  // "recording stopped: PATH: why[; session N keeps X of this job's Y steps]": said when it happens, the chat goes on.
  // tree=auto: sizing a lane's tree takes a few seconds the first time on a machine (then it is cached): say so.
  connect(s_->worker, &EngineWorker::treeTuning, this, [this](int lane, const QString& label, const QString& summary) {
    s_->status_label->setText(summary.isEmpty() ? tr("Sizing %1's tree for this machine (lane %2)…").arg(label).arg(lane + 1)
                                                : tr("%1: %2").arg(label, summary));
  });
  // The cost model beside the statistics and in the inspector's header: this machine's step-cost curve per target.
  connect(s_->worker, &EngineWorker::stepCostReady, this, [this](const QString& target, const runs::StepCost& cost) {
    s_->stats->setStepCost(target, cost);
    s_->inspector->setStepCost(cost);
  });
  connect(s_->worker, &EngineWorker::recordingFailed, this, [this](const QString& m) {
    s_->recording_note = m.left(1).toUpper() + m.mid(1);
    s_->status_label->setText(s_->recording_note);
  });
  connect(s_->worker, &EngineWorker::replyShaped, this, [this](int lane, const ReplyShape& shape) {
    if (lane < s_->traces.lanes()) s_->traces.lane_mut(lane).reply = shape;  // for the statistics by part
    if (s_->job == State::Job::Chat && lane == 0) s_->chat->setReplyShape(shape);
    else if (s_->job == State::Job::Compare) s_->compare->setLaneReplyShape(lane, shape);
  });
  connect(s_->worker, &EngineWorker::stepReady, this, [this](int lane, const StepRecord& st, const QString& piece) {
    if (lane >= s_->traces.lanes()) return;
    s_->traces.append(lane, st, piece.toStdString());
    s_->pacer->stepAdded(lane, int(s_->traces.lane(lane).steps.size()));
  });
  connect(s_->worker, &EngineWorker::referenceStarted, this, [this](int, const QString& target) {
    if (s_->job == State::Job::Compare) s_->compare->referenceStarted(target);
  });
  connect(s_->worker, &EngineWorker::referenceFinished, this, [this](int, const QString& target, const RunSummary& summary) {
    if (s_->job == State::Job::Compare) s_->compare->referenceFinished(target, summary);
  });
  connect(s_->worker, &EngineWorker::laneFinished, this, [this](int lane, const LaneOutcome& outcome) {
    s_->pacer->flush();  // the lane's last steps (all of them when drawing live is off) are drawn now
    if (lane < s_->traces.lanes()) s_->traces.finish(lane, outcome.summary);
    if (s_->job == State::Job::Compare) s_->compare->laneFinished(lane, outcome.summary, outcome.identical);
    setProperty("last_tokens_per_second", outcome.summary.tokens_per_second);  // read by bench/gui_bench
    const bool full = outcome.summary.stop_reason == "context";
    if (s_->job == State::Job::Chat) {
      // "callback": Stop, during the answer or its prompt's prefill.
      s_->chat->answerFinished(outcome.text, outcome.summary.stop_reason == "callback", full ? tr("context full") : QString());
      QString line = QString("%1 · τ %2 · %3 tok/s · %4 tokens")
                         .arg(QString::fromStdString(outcome.summary.method))
                         .arg(outcome.summary.tau, 0, 'f', 2)
                         .arg(outcome.summary.tokens_per_second, 0, 'f', 1)
                         .arg(outcome.summary.new_tokens);
      // Expected beside measured, when the tree was sized for this machine (tree=auto, the CPU default).
      if (!outcome.tree_options.isEmpty())
        line += tr(" (expected %1 tok/s, %2× vanilla, with %3)")
                    .arg(outcome.expected_tokens_per_second, 0, 'f', 1)
                    .arg(outcome.expected_speedup, 0, 'f', 2)
                    .arg(outcome.tree_options);
      // A reasoning reply: speculation while the model thought and while it answered.
      if (const auto& p = outcome.reply_parts; p && p->reasoning.steps > 0)
        line += tr(" · thinking τ %1 over %2 tokens, answer τ %3 over %4")
                    .arg(p->reasoning.tau, 0, 'f', 2)
                    .arg(p->reasoning.tokens)
                    .arg(p->answer.tau, 0, 'f', 2)
                    .arg(p->answer.tokens);
      if (full) line += " · " + QString::fromStdString(runs::context_full_note(outcome.context));
      s_->status_label->setText(line);
    } else if (full) {
      s_->status_label->setText(tr("Lane %1: %2").arg(lane + 1).arg(QString::fromStdString(runs::context_full_note(outcome.context))));
    }
  });
  connect(s_->worker, &EngineWorker::jobFinished, this,
          [this](qint64 session, bool cancelled, const QString& backend, const QString& device) {
    s_->pacer->flush();
    s_->busy = false;
    s_->last_session = session;
    if (!device.isEmpty()) {  // where the job ran, as the runner recorded it
      s_->device = device;
      s_->model_label->setText(QString("%1 · %2").arg(s_->model_description, s_->device));
    }
    if (s_->job == State::Job::Chat) {
      if (session > 0) {
        s_->chat->setSessionId(session);
        s_->chat_store = sessions::store_identity(s_->settings->settings().session_db.toStdString());
      }
      // A failed answer is already in the transcript as an error, not as "[stopped]".
      if (cancelled && !s_->job_failed && s_->traces.lanes() > 0 && !s_->traces.lane(0).summary)
        s_->chat->answerFinished(s_->chat->lastAnswer(), true);
      s_->chat->setBusy(false);
    }
    s_->job_failed = false;
    if (s_->job == State::Job::Compare) s_->compare->runFinished(cancelled);
    s_->stats->setRuns(pointers(s_->traces));
    s_->library->refresh();
    // Where this job's recording went wrong is the last word, over the run's summary line and the library's notes.
    if (!s_->recording_note.isEmpty()) s_->status_label->setText(s_->recording_note);
    s_->job = State::Job::None;
    emit jobDone(session);
  });

  connect(s_->chat, &ChatView::generateRequested, this, [this](const std::vector<ChatMessage>& conversation) {
    close_replay();
    const AppSettings a = s_->settings->settings();
    job_starting(a.method);
    runs::Job job;
    try {
      // The chat's method on Settings' target, or on the family's own target when it needs one (streaming).
      job.lanes = {a.resolve_one(a.method.toStdString())};
      job.backend = parse_backend(a.backend.toStdString());
      job.template_kwargs = runs::parse_template_kwargs(a.template_kwargs.toStdString(), "Template variables");
    } catch (const InputError& e) {
      report_error(QString::fromStdString(e.what()));
      s_->chat->answerFailed(QString::fromStdString(e.what()));
      return;
    }
    job.prompts = {runs::Prompt{conversation.empty() ? std::string() : conversation.back().content, conversation}};
    job.chat = true;
    job.options.max_tokens = a.max_tokens;
    job.options.sampling = a.sampling;
    job.references = false;  // a chat turn is one run, compared with nothing
    qint64 session = s_->chat->sessionId();
    // The chat's session lives in the file it was recorded into: if that store was deleted or replaced since (or
    // Settings name another), this answer starts a new session instead of joining one of another file.
    if (a.record && session > 0 && sessions::store_identity(a.session_db.toStdString()) != s_->chat_store) {
      session = 0;
      s_->recording_note = tr("%1 is not the store this chat was recorded in: its answers now go to a new session")
                               .arg(a.session_db);
      s_->status_label->setText(s_->recording_note);
    }
    if (a.record) job.record = runs::RecordTo{a.session_db.toStdString(), "chat", "", session, nullptr};
    s_->traces.reset(traces_for(job.lanes, a.sampling.greedy()));
    s_->inspector->clear();
    s_->inspector->setRecordedLastStep(-1);
    s_->inspector->setFollowLive(true);
    s_->job = State::Job::Chat;
    s_->busy = true;
    s_->pacer->start(s_->traces.lanes());
    QMetaObject::invokeMethod(s_->worker, [w = s_->worker, job] { w->run(job); }, Qt::QueuedConnection);
  });
  connect(s_->chat, &ChatView::stopRequested, this, &MainWindow::stop);
  connect(s_->chat, &ChatView::newChatStarted, this, [this] { s_->inspector->clear(); });
  // A token clicked in the answer on screen opens the step that made it (the chat's steps are the inspector's).
  connect(s_->chat, &ChatView::stepClicked, this, [this](int step) {
    s_->pacer->flushTrees();  // the text runs ahead of the inspector while a run is live
    s_->focus->open(0, step);
  });
  connect(s_->compare, &CompareView::runRequested, this, &MainWindow::runCompare);
  connect(s_->compare, &CompareView::stopRequested, this, &MainWindow::stop);
  connect(s_->library, &SessionLibraryView::openSession, this, &MainWindow::openSession);
  connect(s_->library, &SessionLibraryView::errorMessage, this, [this](const QString& m) { s_->status_label->setText(m); });
  connect(s_->chat_method, &QComboBox::currentTextChanged, this, [this](const QString& m) {
    AppSettings a = s_->settings->settings();
    if (a.method == m) return;
    a.method = m;
    s_->settings->setSettings(a);
    s_->settings->save();
  });
  connect(s_->settings, &SettingsView::changed, this, [this] {
    const AppSettings a = s_->settings->settings();
    s_->chat_method->blockSignals(true);
    s_->chat_method->setCurrentText(a.method);
    s_->chat_method->blockSignals(false);
    s_->settings->save();
    applyTheme(a.dark);
    s_->library->setDatabase(a.session_db);
    s_->compare->setSettings(a);
    // A new target loads now, with its progress and then its description in the status bar, not at the next run.
    if (!same_path(a.model_path.toStdString(), s_->loaded_model.toStdString())) {
      // The status bar keeps naming the model that is loaded until this one is (if it ever is: its folder may be gone).
      s_->loaded_model = a.model_path;
      // Said now: the worker says it again when it starts, which waits for a run in flight to end. (Not for the
      // model it has just had loaded: that one is still there, and "Loaded" follows at once.)
      if (!same_path(a.model_path.toStdString(), s_->reported_loaded.toStdString())) {
        s_->status_label->setText(tr("Loading %1…").arg(a.model_path));
        s_->loading->setRange(0, 0);
        s_->loading->show();
      }
      QMetaObject::invokeMethod(s_->worker, [w = s_->worker, p = a.model_path] { w->loadModel(p); }, Qt::QueuedConnection);
    }
  });

  // Replay wiring: the same views, fed from the recorded session through the same trace store.
  connect(s_->replay, &ReplayController::cleared, this, [this] {
    const bool compare = s_->replay->session().meta.kind == "compare";
    const bool greedy = s_->replay->lanes().empty() || s_->replay->lanes()[0].greedy;
    s_->traces.reset(s_->replay->lanes());
    // How each recorded reply marked its reasoning, as its summary recorded it (the text views and the statistics).
    for (size_t l = 0; l < s_->replay->laneRuns().size() && int(l) < s_->traces.lanes(); ++l)
      if (const auto& run = s_->replay->laneRuns()[l]; run.outcome)
        s_->traces.lane_mut(int(l)).reply =
            sessions::recorded_reply_shape(run.outcome->summary_json, run.outcome->output_text);
    if (compare) {
      const std::vector<runs::Lane> lanes = s_->replay->laneSpecs();
      if (lanes.size() >= 2) s_->compare->setLanes(lanes);
      s_->compare->setPrompt(s_->replay->laneRuns().empty() ? QString()
                                                            : QString::fromStdString(s_->replay->laneRuns()[0].meta.prompt));
      s_->compare->runStarted(lanes, greedy);
      for (int l = 0; l < s_->traces.lanes(); ++l) s_->compare->setLaneReplyShape(l, s_->traces.lane(l).reply);
      for (const auto& ref : s_->replay->referenceRuns())
        if (ref.outcome)
          s_->compare->referenceFinished(QString::fromStdString(ref.meta.target.path), ref.outcome->summary);
    } else {
      // Earlier turns as plain text; the replayed answer (the last assistant message) streams after them.
      std::vector<ChatMessage> before;
      const auto& msgs = s_->replay->session().messages;
      size_t end = msgs.size();
      if (end > 0 && msgs[end - 1].role == "assistant") --end;
      for (size_t i = 0; i < end; ++i) before.push_back({msgs[i].role, msgs[i].content});
      if (before.empty() && !s_->replay->laneRuns().empty())
        before.push_back({"user", s_->replay->laneRuns()[0].meta.prompt});
      s_->chat->showConversation(before);
      s_->chat->answerStarted();
      if (s_->traces.lanes() > 0) s_->chat->setReplyShape(s_->traces.lane(0).reply);
      s_->replay_answering = true;
      s_->inspector->clear();
      // The header counts to the recorded run's last step, as the replay bar does.
      const auto& lanes = s_->replay->lanes();
      s_->inspector->setRecordedLastStep(lanes.empty() || lanes[0].steps.empty() ? 0 : lanes[0].steps.back().step);
    }
  });
  connect(s_->replay, &ReplayController::step, this, [this](int lane, const StepRecord& st, const QString& piece) {
    if (lane >= s_->traces.lanes()) return;
    s_->traces.append(lane, st, piece.toStdString());
    show_step(lane, int(s_->traces.lane(lane).steps.size()) - 1);
  });
  connect(s_->replay, &ReplayController::laneFinished, this, [this](int lane) {
    const auto& recorded = s_->replay->lanes().at(size_t(lane));
    const auto& run = s_->replay->laneRuns().at(size_t(lane));
    if (recorded.summary) s_->traces.finish(lane, *recorded.summary);
    if (s_->replay->session().meta.kind == "compare") {
      s_->compare->laneFinished(lane, recorded.summary.value_or(RunSummary{}),
                                run.outcome ? run.outcome->identical_to_reference : std::nullopt);
      bool all = true;
      for (int l = 0; l < int(s_->replay->lanes().size()); ++l)
        all &= s_->replay->position() >= int(s_->replay->lanes()[size_t(l)].steps.size());
      if (all) s_->compare->runFinished(false);
    } else {
      s_->chat->answerFinished(QString::fromStdString(run.outcome ? run.outcome->output_text : ""), !run.outcome);
      s_->replay_answering = false;
    }
    s_->stats->setRuns(pointers(s_->traces));
  });
  connect(s_->replay, &ReplayController::positionChanged, this, [this](int pos, int len) {
    s_->scrub->blockSignals(true);
    s_->scrub->setRange(0, len);
    s_->scrub->setValue(pos);
    s_->scrub->blockSignals(false);
    // Step numbers as everywhere else (the StepRecord's, 0: the prefill): `pos` steps shown end at step pos - 1.
    s_->replay_label->setText(tr("Replaying session %1 · step %2 / %3")
                                  .arg(s_->replay->session().id)
                                  .arg(pos > 0 ? QString::number(pos - 1) : QString("–"))
                                  .arg(std::max(len - 1, 0)));
  });
  connect(s_->replay, &ReplayController::playingChanged, this,
          [this](bool playing) { s_->play->setText(playing ? tr("Pause") : tr("Play")); });
  connect(s_->play, &QPushButton::clicked, this, [this] { s_->replay->playing() ? s_->replay->pause() : s_->replay->play(); });
  connect(s_->step_btn, &QPushButton::clicked, s_->replay, &ReplayController::stepForward);
  connect(s_->scrub, &QSlider::valueChanged, s_->replay, &ReplayController::seek);
  connect(s_->speed, &QDoubleSpinBox::valueChanged, s_->replay, &ReplayController::setSpeed);
  connect(close_replay_button, &QPushButton::clicked, this, &MainWindow::close_replay);

  // Linked views: one StepFocus that every view writes and listens to (ui/main/linked_views.h); presenter mode.
  s_->focus = new StepFocus(this);
  link_views(*this, *s_->focus);
  s_->presenter = new PresenterMode(this, s_->focus, &s_->traces);
  connect(s_->replay, &ReplayController::cleared, this,
          [this] { show_session_notes(*this, *s_->presenter, s_->replay->session().meta.notes); });
  auto* live_notes = new LiveNotes(this, s_->presenter);  // the notes of live sessions too, and Add note
  connect(live_notes, &LiveNotes::message, this, [this](const QString& m) { s_->status_label->setText(m); });

  // Menus and shortcuts.
  auto* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("New chat"), QKeySequence::New, this, [this] {
    showTab("chat");
    s_->chat->newChat();
  });
  // The model picker: the models Ollama, LM Studio and the Hugging Face cache keep, grouped, with their drafters.
  file->addAction(tr("Open model…"), QKeySequence::Open, s_->settings, &SettingsView::openModelPicker)
      ->setObjectName("openModelAction");
  file->addSeparator();
  file->addAction(tr("Export tree as PNG…"), this, [this] {
    auto p = QFileDialog::getSaveFileName(this, tr("Export tree"), "tree.png", "PNG (*.png)");
    if (!p.isEmpty()) s_->inspector->exportPng(p);
  });
  file->addAction(tr("Export tree as SVG…"), this, [this] {
    auto p = QFileDialog::getSaveFileName(this, tr("Export tree"), "tree.svg", "SVG (*.svg)");
    if (!p.isEmpty()) s_->inspector->exportSvg(p);
  });
  auto export_session = [this](bool json) {
    const qint64 id = s_->replay->isOpen() ? s_->replay->session().id : s_->last_session;
    if (id <= 0) return;
    auto p = QFileDialog::getSaveFileName(this, tr("Export session"), QString("session-%1.%2").arg(id).arg(json ? "json" : "csv"));
    if (p.isEmpty()) return;
    try {
      sessions::SessionReader reader(s_->settings->settings().session_db.toStdString());
      std::ofstream out(p.toStdString());
      if (json) sessions::export_json(reader, id, out);
      else sessions::export_csv(reader, id, sessions::CsvTable::Nodes, out);
    } catch (const std::exception& e) {
      s_->status_label->setText(QString::fromStdString(e.what()));
    }
  };
  file->addAction(tr("Export session as JSON…"), this, [export_session] { export_session(true); });
  file->addAction(tr("Export session as CSV…"), this, [export_session] { export_session(false); });
  file->addAction(tr("Export as web page…"), this, [this] {
    const qint64 id = s_->replay->isOpen() ? s_->replay->session().id : s_->last_session;
    if (id <= 0) return report_error(tr("Export as web page: no session yet (run or open one first)"));
    auto p = QFileDialog::getSaveFileName(this, tr("Export as web page"), QString("session-%1.html").arg(id),
                                          tr("Web page (*.html)"));
    if (!p.isEmpty()) exportWebPage(p);
  });
  // Only the steps selected on a timeline (the range the statistics count), as `--steps A-B` exports them.
  file->addAction(tr("Export selected range as web page…"), this, [this] {
    if (!s_->focus->range().valid())
      return report_error(tr("Export selected range: select steps on the inspector's timeline first (shift-drag)"));
    auto p = QFileDialog::getSaveFileName(this, tr("Export selected range as web page"), QString("steps.html"),
                                          tr("Web page (*.html)"));
    if (!p.isEmpty()) exportSelectedRangeWebPage(p);
  });
  file->addAction(tr("Export compare table as Markdown…"), this, [this] {
    auto p = QFileDialog::getSaveFileName(this, tr("Export table"), "compare.md", "Markdown (*.md)");
    QFile f(p);
    if (!p.isEmpty() && f.open(QIODevice::WriteOnly)) f.write(s_->compare->markdownTable().toUtf8());
  });
  file->addSeparator();
  file->addAction(tr("Quit"), QKeySequence::Quit, this, &QWidget::close);
  auto* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(tr("Send / Run"), QKeySequence(Qt::CTRL | Qt::Key_R), this, [this] {
    if (s_->tabs->currentWidget() == s_->compare) runCompare();
    else s_->chat->send();
  });
  run->addAction(tr("Stop"), QKeySequence(Qt::Key_Escape), this, &MainWindow::stop);
  run->addAction(tr("Previous step"), QKeySequence(Qt::ALT | Qt::Key_Left), this,
                 [this] { s_->inspector->setCurrentStep(s_->inspector->currentStep() - 1); });
  run->addAction(tr("Next step"), QKeySequence(Qt::ALT | Qt::Key_Right), this,
                 [this] { s_->inspector->setCurrentStep(s_->inspector->currentStep() + 1); });
  run->addAction(tr("Follow live"), QKeySequence(Qt::ALT | Qt::Key_End), this, [this] { s_->inspector->setFollowLive(true); });
  run->addAction(tr("Play / pause replay"), QKeySequence(Qt::CTRL | Qt::Key_Space), this,
                 [this] { s_->replay->playing() ? s_->replay->pause() : s_->replay->play(); });
  run->addSeparator();
  run->addAction(live_notes->addNoteAction());
  auto* view = menuBar()->addMenu(tr("&View"));
  for (auto [name, key] : {std::pair{"Chat", "chat"}, {"Compare", "compare"}, {"Statistics", "statistics"},
                           {"Sessions", "sessions"}, {"Settings", "settings"}}) {
    const QString k = key;
    view->addAction(tr(name), this, [this, k] { showTab(k); });
  }
  auto* live = view->addAction(tr("Draw runs live"));
  live->setCheckable(true);
  live->setChecked(true);
  live->setToolTip(tr("Off: a run is drawn when it ends, for timings free of drawing"));
  connect(live, &QAction::toggled, this, &MainWindow::setLiveDrawing);
  auto* dark = view->addAction(tr("Dark theme"));
  dark->setCheckable(true);
  dark->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
  connect(dark, &QAction::toggled, this, [this](bool on) {
    AppSettings a = s_->settings->settings();
    a.dark = on;
    s_->settings->setSettings(a);
    s_->settings->save();
    applyTheme(on);
  });
  view->addSeparator();
  view->addAction(s_->presenter->toggleAction());
  add_help_menu();

  s_->settings->load();
  const AppSettings a = s_->settings->settings();
  dark->setChecked(a.dark);
  s_->chat_method->setCurrentText(a.method);
  applyTheme(a.dark);
  s_->library->setDatabase(a.session_db);
  s_->compare->setSettings(a);
  s_->status_label->setText(tr("Session store: %1").arg(a.session_db));
  try {  // until a job reports where it ran
    s_->device = QString::fromStdString(backend_description(resolve_backend(parse_backend(a.backend.toStdString()))));
  } catch (const InputError&) {
  }
  // Open on the default model with no configuration: load it now, in the background.
  s_->loaded_model = a.model_path;
  QMetaObject::invokeMethod(s_->worker, [w = s_->worker, p = a.model_path] { w->loadModel(p); }, Qt::QueuedConnection);
}

MainWindow::~MainWindow() {
  s_->worker->cancel();
  s_->thread.quit();
  s_->thread.wait();
}

void MainWindow::closeEvent(QCloseEvent* e) {
  s_->settings->save();
  s_->worker->cancel();
  QMainWindow::closeEvent(e);
}

void MainWindow::show_step(int lane, int index) {
  show_text(lane, index);
  show_tree(lane, index);
}

bool MainWindow::showing_race() const {
  return s_->replay->isOpen() ? s_->replay->session().meta.kind == "compare" : s_->job == State::Job::Compare;
}

void MainWindow::show_text(int lane, int index) {
  const runs::RunTrace& t = s_->traces.lane(lane);
  const StepRecord& st = t.steps.at(size_t(index));
  const QString piece = QString::fromStdString(t.pieces.at(size_t(index)));
  if (showing_race()) s_->compare->laneStepText(lane, st, piece);
  else s_->chat->appendStep(st, piece);
}

void MainWindow::show_tree(int lane, int index) {
  const StepRecord& st = s_->traces.lane(lane).steps.at(size_t(index));
  if (showing_race()) s_->compare->laneStepTree(lane, st);
  else s_->inspector->appendStep(st);
}

void MainWindow::report_error(const QString& message) { s_->status_label->setText(tr("Error: %1").arg(message)); }

QString MainWindow::exportSelectedRangeWebPage(const QString& path) {
  const StepSelection r = s_->focus->range();
  if (!r.valid() || r.lane >= s_->traces.lanes() || r.last >= int(s_->traces.lane(r.lane).steps.size())) {
    const QString error = tr("no range of steps selected");
    report_error(error);
    return error;
  }
  const auto& steps = s_->traces.lane(r.lane).steps;
  return exportWebPage(path, steps[size_t(r.first)].step, steps[size_t(r.last)].step);
}

QString MainWindow::exportWebPage(const QString& path, int first_step, int last_step) {
  const qint64 id = s_->replay->isOpen() ? s_->replay->session().id : s_->last_session;
  QString error;
  try {
    if (id <= 0) throw InputError("export", "no session yet (run or open one first)");
    sessions::SessionReader reader(s_->settings->settings().session_db.toStdString());
    sessions::HtmlExportOptions options;
    if (first_step >= 0) options.steps = sessions::StepRange{first_step, std::max(first_step, last_step)};
    const std::string page = sessions::session_html(reader, id, options);  // built first: a failure leaves the file alone
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(page.data(), qint64(page.size())) != qint64(page.size()))
      throw InputError(path.toStdString(), "cannot write the web page");
    s_->status_label->setText(tr("Session %1 exported as %2").arg(id).arg(path));
  } catch (const std::exception& e) {
    error = QString::fromStdString(e.what());
    report_error(error);
  }
  return error;
}

void MainWindow::job_starting(const QString& what) {
  s_->recording_note.clear();
  s_->status_label->setText(tr("Running %1…").arg(what));
}

void MainWindow::close_replay() {
  s_->replay->close();
  show_session_notes(*this, *s_->presenter, "");  // a closed session's notes are not the next run's
  s_->replay_bar->hide();
  s_->inspector->setRecordedLastStep(-1);
  // A chat answer the replay had not finished showing would leave the chat busy (Send, Regenerate, Edit last and
  // New chat disabled) with nothing running: end it where the replay stopped.
  if (s_->replay_answering) s_->chat->answerFinished(s_->chat->lastAnswer(), true);
  s_->replay_answering = false;
}

void MainWindow::add_help_menu() {
  auto* help = menuBar()->addMenu(tr("&Help"));
  // Non-blocking boxes: reading the help never stops the app.
  auto show_box = [this](const QString& title, const QString& text) {
    auto* box = new QMessageBox(QMessageBox::NoIcon, title, text, QMessageBox::Close, this);
    box->setObjectName(title == tr("About SpecScope") ? "aboutBox" : "shortcutsBox");
    box->setTextFormat(Qt::PlainText);
    box->setTextInteractionFlags(Qt::TextSelectableByMouse);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setModal(false);
    box->show();
  };
  help->addAction(tr("Keyboard shortcuts"), QKeySequence::HelpContents, this,
                  [this, show_box] { show_box(tr("Keyboard shortcuts"), shortcutsText()); });
  help->addAction(tr("About SpecScope"), this, [this, show_box] { show_box(tr("About SpecScope"), aboutText()); });
}

QString MainWindow::aboutText() const {
  const AppSettings a = s_->settings->settings();
  return tr("SpecScope %1\n"
            "Speculative decoding on a local model, with every step's draft tree.\n\n"
            "Backend: %2 (%3)\n"
            "Model: %4\n"
            "Session store: %5\n"
            "Qt %6")
      .arg(QApplication::applicationVersion().isEmpty() ? QString(SPECSCOPE_VERSION) : QApplication::applicationVersion(),
           a.backend, s_->device.isEmpty() ? tr("not known until a run") : s_->device, a.model_path, a.session_db,
           QString(qVersion()));
}

QString MainWindow::shortcutsText() const {
  // The menus' own shortcuts, read from their actions so this list cannot go stale; then the keys that belong
  // to a widget rather than a menu.
  QStringList lines;
  for (QAction* top : menuBar()->actions()) {
    if (!top->menu()) continue;
    for (QAction* act : top->menu()->actions())
      if (!act->shortcut().isEmpty())
        lines << QString("%1\t%2 › %3")
                     .arg(act->shortcut().toString(QKeySequence::NativeText), QString(top->text()).remove('&'),
                          QString(act->text()).remove('&').remove(QChar(0x2026)));
  }
  lines << ""
        << tr("Ctrl+Return\tChat › Send (in the message box)")
        << tr("F, double-click\tInspector › Fit the tree to the view")
        << tr("Left, Right, Home, End\tInspector › Step through the timeline (End: follow the live run)")
        << tr("Drag, wheel\tInspector › Pan, zoom")
        << tr("Wheel, drag\tInspector timeline › Zoom about the cursor; pan when zoomed")
        << tr("Shift-drag, right-drag\tInspector timeline › Select steps (the statistics count them; Esc or double-click clears)")
        << tr("Space\tPresenter mode › Play / pause the replay at the pace")
        << tr("Click a token\tChat › Open its step in the inspector");
  return lines.join('\n');
}

void MainWindow::setLiveDrawing(bool on) { s_->pacer->setEnabled(on); }

void MainWindow::stop() {
  s_->worker->cancel();
  s_->replay->pause();
}

void MainWindow::runCompare() {
  if (s_->busy) return;
  const QString prompt = s_->compare->prompt().trimmed();
  if (prompt.isEmpty()) return;
  close_replay();
  const AppSettings a = s_->settings->settings();
  job_starting(tr("the comparison"));
  runs::Job job;
  try {
    // Each lane's own keys, then Settings, then the family manifest: streaming finds its own target there.
    job.lanes = a.resolve(s_->compare->laneRequests());
    job.backend = parse_backend(a.backend.toStdString());
    job.template_kwargs = runs::parse_template_kwargs(a.template_kwargs.toStdString(), "Template variables");
  } catch (const InputError& e) {
    report_error(QString::fromStdString(e.what()));
    return;
  }
  job.prompts = {runs::Prompt{prompt.toStdString(), {}}};
  job.chat = true;
  job.options.max_tokens = a.max_tokens;
  job.options.sampling = a.sampling;
  job.schedule = s_->compare->interleaved() ? runs::Schedule::Interleaved : runs::Schedule::Sequential;
  job.references = true;
  if (a.record) job.record = runs::RecordTo{a.session_db.toStdString(), "compare", "", 0, nullptr};
  s_->traces.reset(traces_for(job.lanes, a.sampling.greedy()));
  s_->compare->runStarted(job.lanes, a.sampling.greedy());
  s_->job = State::Job::Compare;
  s_->busy = true;
  s_->pacer->start(s_->traces.lanes());
  QMetaObject::invokeMethod(s_->worker, [w = s_->worker, job] { w->run(job); }, Qt::QueuedConnection);
}

void MainWindow::openSession(qint64 id) {
  if (s_->busy) return;
  try {
    close_replay();  // the chat may still be showing the previous replay's answer
    s_->replay->setSpeed(s_->speed->value());
    s_->replay->open(s_->settings->settings().session_db, id);
  } catch (const std::exception& e) {
    s_->status_label->setText(QString::fromStdString(e.what()));
    return;
  }
  s_->replay_bar->show();
  showTab(s_->replay->session().meta.kind == "compare" ? "compare" : "chat");
  s_->replay->play();
}

void MainWindow::showTab(const QString& name) {
  static const QStringList names = {"chat", "compare", "statistics", "sessions", "settings"};
  const int i = int(names.indexOf(name));
  if (i >= 0) s_->tabs->setCurrentIndex(i);
}

void MainWindow::applyTheme(bool dark) {
  qApp->setStyle(QStyleFactory::create("Fusion"));
  qApp->setPalette(app_palette(dark));
  s_->chat->setDark(dark);
  s_->inspector->setDarkTheme(dark);
  s_->compare->setDark(dark);
  s_->stats->setDark(dark);
  s_->presenter->applyLook();  // presenting: the high-contrast look stays over whatever theme the settings give
}

ChatView* MainWindow::chat() const { return s_->chat; }
CompareView* MainWindow::compare() const { return s_->compare; }
StatisticsView* MainWindow::statistics() const { return s_->stats; }
SessionLibraryView* MainWindow::library() const { return s_->library; }
SettingsView* MainWindow::settingsView() const { return s_->settings; }
TreeInspectorWidget* MainWindow::inspector() const { return s_->inspector; }
ReplayController* MainWindow::replay() const { return s_->replay; }
StepFocus* MainWindow::stepFocus() const { return s_->focus; }
PresenterMode* MainWindow::presenter() const { return s_->presenter; }
const runs::TraceStore& MainWindow::traces() const { return s_->traces; }
bool MainWindow::busy() const { return s_->busy; }
QString MainWindow::statusText() const { return s_->status_label->text(); }
QString MainWindow::modelText() const { return s_->model_label->text(); }
qint64 MainWindow::lastSessionId() const { return s_->last_session; }

}  // namespace specscope::ui
