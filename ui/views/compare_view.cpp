#include "ui/views/compare_view.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <cmath>

#include "engine/methods/factory.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/views/token_text_view.h"

namespace specscope::ui {

namespace {
struct Lane {
  QGroupBox* box;
  QComboBox* method;
  TokenTextView* text;
  TreeInspectorWidget* tree;
  QLabel* stats;
  // Live numbers.
  int steps = 0, tokens = 0, forwards = 0, decoding_steps = 0;
  int64_t micros = 0;
  bool finished = false, identical = true;
  RunSummary summary;
};
}  // namespace

struct CompareView::State {
  QLineEdit* prompt;
  QSpinBox* lanes_count;
  QComboBox* mode;
  QPushButton *run, *stop, *copy;
  QLabel *verdict, *mode_note;
  QGridLayout* grid;
  std::vector<Lane> lanes;
  bool greedy = true;
  bool dark = false;
};

CompareView::CompareView(QWidget* parent) : QWidget(parent), s_(std::make_unique<State>()) {
  auto* root = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  s_->prompt = new QLineEdit;
  s_->prompt->setObjectName("comparePrompt");
  s_->prompt->setPlaceholderText(tr("A prompt for every lane"));
  s_->lanes_count = new QSpinBox;
  s_->lanes_count->setRange(2, 4);
  s_->lanes_count->setValue(3);
  s_->lanes_count->setPrefix(tr("lanes: "));
  s_->mode = new QComboBox;
  s_->mode->addItem(tr("interleaved (side by side)"));
  s_->mode->addItem(tr("one after another (clean timings)"));
  s_->run = new QPushButton(tr("Run"));
  s_->stop = new QPushButton(tr("Stop"));
  s_->copy = new QPushButton(tr("Copy table (Markdown)"));
  top->addWidget(s_->prompt, 1);
  top->addWidget(s_->lanes_count);
  top->addWidget(s_->mode);
  top->addWidget(s_->run);
  top->addWidget(s_->stop);
  top->addWidget(s_->copy);
  root->addLayout(top);
  s_->mode_note = new QLabel;
  root->addWidget(s_->mode_note);
  s_->grid = new QGridLayout;
  root->addLayout(s_->grid, 1);
  s_->verdict = new QLabel;
  s_->verdict->setObjectName("compareVerdict");
  QFont f = s_->verdict->font();
  f.setBold(true);
  s_->verdict->setFont(f);
  root->addWidget(s_->verdict);

  const std::vector<std::string> methods = known_methods();
  for (int l = 0; l < 4; ++l) {
    Lane lane;
    lane.box = new QGroupBox;
    auto* v = new QVBoxLayout(lane.box);
    lane.method = new QComboBox;
    for (auto& m : methods) lane.method->addItem(QString::fromStdString(m));
    lane.text = new TokenTextView;
    lane.tree = new TreeInspectorWidget;
    lane.tree->setCompact(true);
    lane.tree->setMinimumHeight(140);
    lane.stats = new QLabel(tr("–"));
    lane.stats->setTextFormat(Qt::PlainText);
    v->addWidget(lane.method);
    v->addWidget(lane.text, 3);
    v->addWidget(lane.tree, 2);
    v->addWidget(lane.stats);
    s_->grid->addWidget(lane.box, 0, l);
    s_->lanes.push_back(lane);
  }
  setLaneMethods({"vanilla", "sps", "pld"});
  auto update_mode_note = [this] {
    s_->mode_note->setText(interleaved()
                               ? tr("Interleaved: one step of each lane in turn, so they progress side by side; "
                                    "tokens/s count only each lane's own compute.")
                               : tr("One after another: each lane runs alone, for clean timings."));
  };
  connect(s_->mode, &QComboBox::currentIndexChanged, this, update_mode_note);
  update_mode_note();
  connect(s_->lanes_count, &QSpinBox::valueChanged, this, [this](int n) {
    for (int l = 0; l < 4; ++l) s_->lanes[size_t(l)].box->setVisible(l < n);
  });
  connect(s_->run, &QPushButton::clicked, this, &CompareView::runRequested);
  connect(s_->stop, &QPushButton::clicked, this, &CompareView::stopRequested);
  connect(s_->copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(markdownTable()); });
  setBusy(false);
}

CompareView::~CompareView() = default;

std::vector<std::string> CompareView::laneMethods() const {
  std::vector<std::string> out;
  for (int l = 0; l < s_->lanes_count->value(); ++l) out.push_back(s_->lanes[size_t(l)].method->currentText().toStdString());
  return out;
}

void CompareView::setLaneMethods(const std::vector<std::string>& methods) {
  const int n = std::clamp(int(methods.size()), 2, 4);
  s_->lanes_count->setValue(n);
  for (int l = 0; l < 4; ++l) {
    if (l < int(methods.size())) s_->lanes[size_t(l)].method->setCurrentText(QString::fromStdString(methods[size_t(l)]));
    s_->lanes[size_t(l)].box->setVisible(l < n);
  }
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
  for (auto& l : s_->lanes) l.method->setEnabled(!busy);
}

void CompareView::setDark(bool dark) {
  s_->dark = dark;
  for (auto& l : s_->lanes) {
    l.text->setDark(dark);
    l.tree->setDarkTheme(dark);
  }
}

void CompareView::runStarted(bool greedy) {
  s_->greedy = greedy;
  s_->verdict->setText(tr("running…"));
  for (auto& l : s_->lanes) {
    l.text->clear();
    l.text->clearGenerated();
    l.tree->clear();
    l.stats->setText(tr("–"));
    l.steps = l.tokens = l.forwards = l.decoding_steps = 0;
    l.micros = 0;
    l.finished = false;
    l.summary = RunSummary{};
  }
  setBusy(true);
}

void CompareView::laneStep(int lane, const StepRecord& step, const QString& piece) {
  if (lane < 0 || lane >= int(s_->lanes.size())) return;
  Lane& l = s_->lanes[size_t(lane)];
  l.text->appendStep(step, piece);
  l.tree->appendStep(step);
  l.steps++;
  l.forwards += step.target_forwards;
  l.micros += step.timings.total_us();
  if (step.root_token >= 0) {
    l.decoding_steps++;
    l.tokens += int(step.committed.size());
  }
  const double tau = l.decoding_steps ? double(l.tokens) / l.decoding_steps : 0;
  const double tps = l.micros > 0 ? l.tokens / (l.micros * 1e-6) : 0;
  const Lane& ref = s_->lanes[0];
  const double ref_tps = ref.micros > 0 ? ref.tokens / (ref.micros * 1e-6) : 0;
  l.stats->setText(QString("τ %1 · %2 tok/s · %3 target forwards%4")
                       .arg(tau, 0, 'f', 2)
                       .arg(tps, 0, 'f', 1)
                       .arg(l.forwards)
                       .arg(lane > 0 && ref_tps > 0 ? QString(" · %1× vs lane 1").arg(tps / ref_tps, 0, 'f', 2) : QString()));
}

void CompareView::laneFinished(int lane, const RunSummary& summary, bool identical) {
  if (lane < 0 || lane >= int(s_->lanes.size())) return;
  Lane& l = s_->lanes[size_t(lane)];
  l.text->flush();
  l.finished = true;
  l.identical = identical;
  l.summary = summary;
  QString speed = std::isnan(summary.speedup_vs_vanilla) || lane == 0
                      ? QString()
                      : QString(" · %1× vs lane 1").arg(summary.speedup_vs_vanilla, 0, 'f', 2);
  l.stats->setText(QString("τ %1 · %2 tok/s · %3 target forwards%4%5")
                       .arg(summary.tau, 0, 'f', 2)
                       .arg(summary.tokens_per_second, 0, 'f', 1)
                       .arg(summary.target_forwards)
                       .arg(speed)
                       .arg(s_->greedy && lane > 0 ? (identical ? " · same text" : " · DIFFERENT") : ""));
}

void CompareView::runFinished(bool cancelled) {
  setBusy(false);
  const int n = s_->lanes_count->value();
  bool all_same = true;
  for (int l = 1; l < n; ++l) all_same &= s_->lanes[size_t(l)].identical;
  if (cancelled) s_->verdict->setText(tr("stopped"));
  else if (!s_->greedy) s_->verdict->setText(tr("sampled runs: outputs differ by design (same distribution)"));
  else
    s_->verdict->setText(all_same ? tr("verdict: all greedy outputs identical to lane 1")
                                  : tr("verdict: MISMATCH — some greedy outputs differ from lane 1 (a bug)"));
}

QString CompareView::verdict() const { return s_->verdict->text(); }
QString CompareView::laneText(int lane) const { return s_->lanes.at(size_t(lane)).text->generatedText(); }
int CompareView::laneNodesDrawn(int lane) const { return s_->lanes.at(size_t(lane)).tree->nodesDrawnLastFrame(); }

QString CompareView::markdownTable() const {
  QString md = "| lane | method | tokens | target forwards | τ | tok/s | speedup | same as lane 1 |\n"
               "|---|---|---|---|---|---|---|---|\n";
  const int n = s_->lanes_count->value();
  for (int l = 0; l < n; ++l) {
    const Lane& lane = s_->lanes[size_t(l)];
    const RunSummary& s = lane.summary;
    md += QString("| %1 | %2 | %3 | %4 | %5 | %6 | %7 | %8 |\n")
              .arg(l + 1)
              .arg(lane.method->currentText())
              .arg(s.new_tokens)
              .arg(s.target_forwards)
              .arg(s.tau, 0, 'f', 2)
              .arg(s.tokens_per_second, 0, 'f', 1)
              .arg(l == 0 || std::isnan(s.speedup_vs_vanilla) ? QString("1.00×") : QString("%1×").arg(s.speedup_vs_vanilla, 0, 'f', 2))
              .arg(l == 0 ? "—" : (lane.identical ? "yes" : "no"));
  }
  return md;
}

}  // namespace specscope::ui
