#include "ui/views/compare_view.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>
#include <cmath>

#include "ui/engine/app_settings.h"
#include "ui/engine/step_focus.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/views/lane_editor.h"
#include "ui/views/lane_inspector.h"
#include "ui/views/race_cursor.h"
#include "ui/views/race_lane.h"
#include "ui/views/token_text_view.h"

namespace specscope::ui {

namespace {

constexpr int kMaxLanes = 4;

QString short_name(const std::string& path) {
  const QFileInfo f(QString::fromStdString(path));
  return f.fileName().isEmpty() ? f.filePath() : f.fileName();
}

// What the runner said about a lane when it ended.
struct LaneResult {
  bool finished = false;
  RunSummary summary;
  std::optional<bool> identical;
};

}  // namespace

struct CompareView::State {
  const runs::TraceStore* store = nullptr;
  QLineEdit* prompt;
  QSpinBox* lanes_count;
  QComboBox* mode;
  QPushButton *run, *stop, *copy;
  QLabel *verdict, *mode_note, *references;
  QGridLayout* grid;
  QSplitter* split;
  LaneInspector* inspector;
  RaceCursor* cursor;
  StepFocus* focus = nullptr;
  std::vector<RaceLane*> lanes;
  std::vector<runs::Lane> running;  // the lanes of the race shown (live or replayed)
  std::vector<LaneResult> results;
  QStringList reference_parts;
  bool greedy = true;
};

CompareView::CompareView(QWidget* parent) : QWidget(parent), s_(std::make_unique<State>()) {
  auto* root = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  s_->prompt = new QLineEdit;
  s_->prompt->setObjectName("comparePrompt");
  s_->prompt->setPlaceholderText(tr("A prompt for every lane"));
  s_->lanes_count = new QSpinBox;
  s_->lanes_count->setRange(2, kMaxLanes);
  s_->lanes_count->setValue(3);
  s_->lanes_count->setPrefix(tr("lanes: "));
  s_->mode = new QComboBox;
  s_->mode->addItem(tr("interleaved (side by side)"));
  s_->mode->addItem(tr("one after another (clean timings)"));
  s_->run = new QPushButton(tr("Run"));
  s_->stop = new QPushButton(tr("Stop"));
  s_->copy = new QPushButton(tr("Copy table (Markdown)"));
  top->addWidget(s_->prompt, 1);
  for (QWidget* w : std::initializer_list<QWidget*>{s_->lanes_count, s_->mode, s_->run, s_->stop, s_->copy})
    top->addWidget(w);
  root->addLayout(top);
  s_->mode_note = new QLabel;
  s_->mode_note->setWordWrap(true);
  root->addWidget(s_->mode_note);
  s_->references = new QLabel;
  s_->references->setObjectName("compareReferences");
  s_->references->setWordWrap(true);
  s_->references->setToolTip(tr("Each lane's speedup and verdict are against vanilla decoding on the lane's own "
                                "target, run once per target with the same prompt and sampling"));
  root->addWidget(s_->references);

  auto* lanes_widget = new QWidget;
  s_->grid = new QGridLayout(lanes_widget);
  s_->grid->setContentsMargins(0, 0, 0, 0);
  for (int l = 0; l < kMaxLanes; ++l) {
    auto* lane = new RaceLane(l);
    s_->grid->addWidget(lane, 0, l);
    s_->lanes.push_back(lane);
    // A lane position (its miniature, a token of its text) opens that step of the lane in the inspector.
    auto open = [this](int l, int step) {
      if (s_->focus) s_->focus->open(l, step);
      else inspectLane(l, step);
    };
    connect(lane, &RaceLane::miniatureClicked, this, open);
    connect(lane, &RaceLane::textStepClicked, this, open);
  }
  s_->inspector = new LaneInspector;
  s_->split = new QSplitter(Qt::Vertical);
  s_->split->addWidget(lanes_widget);
  s_->split->addWidget(s_->inspector);
  s_->split->setStretchFactor(0, 3);
  s_->split->setStretchFactor(1, 2);
  s_->inspector->hide();
  root->addWidget(s_->split, 1);
  s_->cursor = new RaceCursor;
  root->addWidget(s_->cursor);
  s_->verdict = new QLabel;
  s_->verdict->setObjectName("compareVerdict");
  s_->verdict->setWordWrap(true);
  QFont f = s_->verdict->font();
  f.setBold(true);
  s_->verdict->setFont(f);
  root->addWidget(s_->verdict);

  setLaneMethods({"eagle2", "medusa", "streaming"});
  auto update_mode_note = [this] {
    s_->mode_note->setText(interleaved()
                               ? tr("Interleaved: each lane computes for 20 ms in turn, so they progress side by side; "
                                    "tokens/s count only each lane's own compute.")
                               : tr("One after another: each lane runs alone, for clean timings."));
  };
  connect(s_->mode, &QComboBox::currentIndexChanged, this, update_mode_note);
  update_mode_note();
  connect(s_->lanes_count, &QSpinBox::valueChanged, this, [this](int n) {
    for (int l = 0; l < kMaxLanes; ++l) {
      s_->lanes[size_t(l)]->setVisible(l < n);
      s_->grid->setColumnStretch(l, l < n ? 1 : 0);  // visible lanes share the width equally
    }
  });
  connect(s_->run, &QPushButton::clicked, this, &CompareView::runRequested);
  connect(s_->stop, &QPushButton::clicked, this, &CompareView::stopRequested);
  connect(s_->copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(markdownTable()); });
  connect(s_->cursor, &RaceCursor::tokenChanged, this, &CompareView::apply_cursor);
  connect(s_->cursor, &RaceCursor::liveChanged, this, &CompareView::apply_cursor);
  connect(s_->inspector, &LaneInspector::closeRequested, s_->inspector, &QWidget::hide);
  setBusy(false);
}

CompareView::~CompareView() = default;

void CompareView::setTraceStore(const runs::TraceStore* store) {
  s_->store = store;
  for (auto* l : s_->lanes) l->setStore(store);
  s_->inspector->setStore(store);
}

void CompareView::setStepFocus(StepFocus* focus) { s_->focus = focus; }

void CompareView::setSettings(const AppSettings& settings) {
  for (auto* l : s_->lanes) l->editor()->setSettings(settings);
}

std::vector<runs::LaneRequest> CompareView::laneRequests() const {
  std::vector<runs::LaneRequest> out;
  for (int l = 0; l < s_->lanes_count->value(); ++l) out.push_back(s_->lanes[size_t(l)]->editor()->request());
  return out;
}

void CompareView::setLaneMethods(const std::vector<std::string>& methods) {
  std::vector<runs::LaneRequest> requests;
  for (const auto& m : methods) requests.push_back({m, {}, m});
  const int n = std::clamp(int(methods.size()), 2, kMaxLanes);
  s_->lanes_count->setValue(n);
  emit s_->lanes_count->valueChanged(n);  // the column stretches, also when n did not change
  for (int l = 0; l < int(methods.size()) && l < kMaxLanes; ++l)
    s_->lanes[size_t(l)]->editor()->setRequest(requests[size_t(l)]);
}

void CompareView::setLanes(const std::vector<runs::Lane>& lanes) {
  std::vector<std::string> methods;
  for (const auto& l : lanes) methods.push_back(l.method.name);
  setLaneMethods(methods);
  for (int l = 0; l < int(lanes.size()) && l < kMaxLanes; ++l) s_->lanes[size_t(l)]->editor()->setLane(lanes[size_t(l)]);
}

QString CompareView::prompt() const { return s_->prompt->text(); }
void CompareView::setPrompt(const QString& p) { s_->prompt->setText(p); }
bool CompareView::interleaved() const { return s_->mode->currentIndex() == 0; }
void CompareView::setInterleaved(bool on) { s_->mode->setCurrentIndex(on ? 0 : 1); }

void CompareView::setBusy(bool busy) {
  s_->run->setEnabled(!busy);
  s_->stop->setEnabled(busy);
  s_->lanes_count->setEnabled(!busy);
  s_->mode->setEnabled(!busy);
  for (auto* l : s_->lanes) l->setBusy(busy);
}

void CompareView::setDark(bool dark) {
  for (auto* l : s_->lanes) l->setDark(dark);
  s_->inspector->setDark(dark);
}

void CompareView::runStarted(const std::vector<runs::Lane>& lanes, bool greedy) {
  s_->greedy = greedy;
  s_->running = lanes;
  s_->results.assign(lanes.size(), LaneResult{});
  s_->reference_parts.clear();
  s_->references->setText(tr("reference: vanilla on each lane's target, run first"));
  s_->verdict->setText(tr("running…"));
  QStringList labels;
  for (int l = 0; l < kMaxLanes; ++l)
    if (l < int(lanes.size())) {
      s_->lanes[size_t(l)]->begin(lanes[size_t(l)]);
      labels << QString::fromStdString(lanes[size_t(l)].label);
    }
  // An open inspector stays on its lane (a replay's backward seek restarts the race) and follows it live.
  const int inspected = std::clamp(s_->inspector->lane(), 0, std::max(0, int(lanes.size()) - 1));
  s_->inspector->setLanes(labels);
  if (s_->inspector->isVisible()) s_->inspector->showLane(inspected, -1);
  s_->cursor->reset();
  setBusy(true);
}

void CompareView::referenceStarted(const QString& target) {
  s_->references->setText(
      (s_->reference_parts.isEmpty() ? tr("reference: ") : tr("reference: %1 · ").arg(s_->reference_parts.join(" · "))) +
      tr("vanilla on %1 running…").arg(short_name(target.toStdString())));
}

void CompareView::referenceFinished(const QString& target, const RunSummary& summary) {
  s_->reference_parts << tr("vanilla on %1 %2 tok/s")
                             .arg(short_name(target.toStdString()))
                             .arg(QLocale().toString(summary.tokens_per_second, 'f', 0));
  s_->references->setText(tr("reference: %1").arg(s_->reference_parts.join(" · ")));
}

void CompareView::laneStep(int lane, const StepRecord& step, const QString& piece) {
  laneStepText(lane, step, piece);
  laneStepTree(lane, step);
}

void CompareView::laneStepText(int lane, const StepRecord& step, const QString& piece) {
  if (lane < 0 || lane >= kMaxLanes) return;
  s_->lanes[size_t(lane)]->appendText(step, piece);
  if (s_->store && lane < s_->store->lanes())
    s_->cursor->setTokenCount(std::max(s_->cursor->tokenCount(), s_->store->lane(lane).tokens()));
}

void CompareView::setLaneReplyShape(int lane, const ReplyShape& shape) {
  if (lane < 0 || lane >= kMaxLanes) return;
  s_->lanes[size_t(lane)]->text()->setReplyShape(shape);
}

void CompareView::laneStepTree(int lane, const StepRecord& step) {
  if (lane < 0 || lane >= kMaxLanes) return;
  s_->lanes[size_t(lane)]->appendTree(step);
  s_->inspector->laneStepAppended(lane);
  if (!s_->cursor->live()) apply_cursor();  // a lane that reaches the cursor's token shows it
}

void CompareView::laneFinished(int lane, const RunSummary& summary, std::optional<bool> identical) {
  if (lane < 0 || lane >= int(s_->results.size())) return;
  s_->results[size_t(lane)] = {true, summary, identical};
  s_->lanes[size_t(lane)]->text()->finishReply();
  s_->lanes[size_t(lane)]->finish(summary, identical, s_->greedy);
}

void CompareView::runFinished(bool cancelled) {
  setBusy(false);
  bool all_same = true, all_judged = true;
  for (const auto& r : s_->results) {
    all_judged &= r.finished && r.identical.has_value();
    all_same &= r.identical.value_or(true);
  }
  if (cancelled) s_->verdict->setText(tr("stopped"));
  else if (!s_->greedy) s_->verdict->setText(tr("sampled runs: outputs differ by design (same distribution)"));
  else if (!all_judged) s_->verdict->setText(tr("verdict: some lanes have no reference to compare with"));
  else
    s_->verdict->setText(all_same ? tr("verdict: every greedy output is identical to vanilla on its own target")
                                  : tr("verdict: MISMATCH — a greedy output differs from vanilla on its target (a bug)"));
}

RaceCursor* CompareView::cursor() const { return s_->cursor; }

void CompareView::apply_cursor() {
  const int token = s_->cursor->token();  // -1: live
  for (int l = 0; l < int(s_->running.size()) && l < kMaxLanes; ++l) {
    const int step = token < 0 || !s_->store ? -1 : s_->store->step_at_token(l, token);
    // A lane that has not produced the token yet (or ended short of it) stays on its newest step.
    s_->lanes[size_t(l)]->showStep(step);
  }
  const int lane = inspectedLane();
  if (lane >= 0 && token >= 0 && s_->store) {
    const int step = s_->store->step_at_token(lane, token);
    if (step >= 0) s_->inspector->tree()->setCurrentStep(step);
  }
}

void CompareView::inspectLane(int lane, int step) {
  s_->inspector->show();
  s_->inspector->showLane(lane, step);
}

TreeInspectorWidget* CompareView::laneInspector() const { return s_->inspector->tree(); }
int CompareView::inspectedLane() const { return s_->inspector->isVisible() ? s_->inspector->lane() : -1; }
TreeInspectorWidget* CompareView::laneMiniature(int lane) const { return s_->lanes.at(size_t(lane))->miniature(); }
int CompareView::laneShownStep(int lane) const { return s_->lanes.at(size_t(lane))->shownStep(); }
int CompareView::laneHighlightedStep(int lane) const { return s_->lanes.at(size_t(lane))->text()->highlightedStep(); }
QString CompareView::verdict() const { return s_->verdict->text(); }
QString CompareView::referenceLine() const { return s_->references->text(); }
QString CompareView::laneText(int lane) const { return s_->lanes.at(size_t(lane))->text()->generatedText(); }
QString CompareView::laneTitle(int lane) const { return s_->lanes.at(size_t(lane))->title(); }
QString CompareView::laneStatLine(int lane) const { return s_->lanes.at(size_t(lane))->statLine(); }
int CompareView::laneNodesDrawn(int lane) const { return s_->lanes.at(size_t(lane))->miniature()->nodesDrawnLastFrame(); }

QString CompareView::markdownTable() const {
  QString md = "| lane | label | target | tokens | target forwards | τ | tok/s | speedup vs vanilla on its target | "
               "same as its reference |\n|---|---|---|---|---|---|---|---|---|\n";
  for (size_t l = 0; l < s_->running.size() && l < s_->results.size(); ++l) {
    const RunSummary& s = s_->results[l].summary;
    const auto& same = s_->results[l].identical;
    md += QString("| %1 | %2 | %3 | %4 | %5 | %6 | %7 | %8 | %9 |\n")
              .arg(l + 1)
              .arg(QString::fromStdString(s_->running[l].label))
              .arg(short_name(s_->running[l].target))
              .arg(s.new_tokens)
              .arg(s.target_forwards)
              .arg(s.tau, 0, 'f', 2)
              .arg(s.tokens_per_second, 0, 'f', 1)
              .arg(std::isnan(s.speedup_vs_vanilla) ? QString("—") : QString("%1×").arg(s.speedup_vs_vanilla, 0, 'f', 2))
              .arg(!same ? "—" : *same ? "yes" : "no");
  }
  return md;
}

}  // namespace specscope::ui
