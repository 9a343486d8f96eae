#include "ui/views/race_lane.h"

#include <QEvent>
#include <QFileInfo>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>

#include "runs/run_statistics.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/views/lane_editor.h"
#include "ui/views/token_text_view.h"

namespace specscope::ui {

namespace {

QString short_name(const std::string& path) {
  const QFileInfo f(QString::fromStdString(path));
  return f.fileName().isEmpty() ? f.filePath() : f.fileName();
}

QString ms(int64_t us) { return QString::number(double(us) / 1000.0, 'f', 1); }

}  // namespace

RaceLane::RaceLane(int index, QWidget* parent) : QGroupBox(parent), index_(index) {
  setTitle(tr("Lane %1").arg(index + 1));
  // Equal shares of the width whatever the content: the grid's stretch decides, not the texts' hints.
  setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  editor_ = new LaneEditor;
  text_ = new TokenTextView;
  text_->setMinimumWidth(60);
  tree_ = new TreeInspectorWidget;
  tree_->setCompact(true);
  tree_->setMinimumHeight(140);
  tree_->setCursor(Qt::PointingHandCursor);
  tree_->installEventFilter(this);
  connect(text_, &TokenTextView::stepClicked, this, [this](int step) { emit textStepClicked(index_, step); });
  stats_ = new QLabel(QStringLiteral("–"));
  stats_->setObjectName("laneStats");
  stats_->setTextFormat(Qt::PlainText);
  stats_->setWordWrap(true);  // four lanes on 1600 px: the line wraps rather than clips
  stats_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  v->addWidget(editor_);
  v->addWidget(text_, 3);
  v->addWidget(tree_, 2);
  v->addWidget(stats_);
}

const runs::RunTrace* RaceLane::trace() const {
  return store_ && index_ < store_->lanes() ? &store_->lane(index_) : nullptr;
}

void RaceLane::begin(const runs::Lane& lane) {
  target_ = lane.target;
  setTitle(tr("%1 · %2 · on %3").arg(index_ + 1).arg(QString::fromStdString(lane.label), short_name(lane.target)));
  setToolTip(tr("target: %1").arg(QString::fromStdString(lane.target)));
  text_->clear();
  text_->clearGenerated();
  tree_->clear();
  stats_->setText(QStringLiteral("–"));
}

void RaceLane::appendStep(const StepRecord& step, const QString& piece) {
  appendText(step, piece);
  appendTree(step);
}

void RaceLane::appendTree(const StepRecord& step) { tree_->appendStep(step); }

void RaceLane::appendText(const StepRecord& step, const QString& piece) {
  text_->appendStep(step, piece);
  const runs::RunTrace* t = trace();
  if (!t) return;
  // The engine's own definitions (summarize), over the steps the store holds so far.
  const RunSummary s = summarize(t->method, t->steps);
  stats_->setText(tr("τ %1 · %2 tok/s · %3 target forwards")
                      .arg(s.tau, 0, 'f', 2)
                      .arg(runs::compute_tokens_per_second(t->steps), 0, 'f', 1)
                      .arg(s.target_forwards));
}

void RaceLane::finish(const RunSummary& s, std::optional<bool> identical, bool greedy) {
  text_->flush();
  QString line = tr("τ %1 · %2 tok/s · %3 target forwards")
                     .arg(s.tau, 0, 'f', 2)
                     .arg(s.tokens_per_second, 0, 'f', 1)
                     .arg(s.target_forwards);
  if (!std::isnan(s.speedup_vs_vanilla))
    line += tr(" · %1× vs vanilla on %2").arg(s.speedup_vs_vanilla, 0, 'f', 2).arg(short_name(target_));
  if (greedy && identical) line += *identical ? tr(" · same text as its reference") : tr(" · DIFFERENT from its reference");
  stats_->setText(line);
}

void RaceLane::showStep(int step) {
  if (step < 0) {
    tree_->setFollowLive(true);
    text_->highlightStep(-1);
    return;
  }
  tree_->setCurrentStep(step);
  text_->highlightStep(step);
}

int RaceLane::shownStep() const { return tree_->currentStep(); }
QString RaceLane::statLine() const { return stats_->text(); }

void RaceLane::setDark(bool dark) {
  text_->setDark(dark);
  tree_->setDarkTheme(dark);
}

void RaceLane::setBusy(bool busy) { editor_->setBusy(busy); }

QString RaceLane::describeStep(const runs::RunTrace& t, int i) {
  if (i < 0 || i >= int(t.steps.size())) return {};
  const StepRecord& s = t.steps[size_t(i)];
  int pruned = 0;
  for (const auto& n : s.nodes) pruned += n.pruned;
  QStringList lines;
  lines << QObject::tr("%1 · step %2 of %3").arg(QString::fromStdString(t.label.empty() ? t.method : t.label)).arg(i).arg(t.steps.size() - 1);
  if (s.root_token < 0) lines << QObject::tr("prefill: the prompt and the first token");
  else if (s.nodes.empty()) lines << QObject::tr("no draft: one token from the target");
  else
    lines << QObject::tr("drafted %1 nodes%2, accepted %3 + 1 from the target")
                 .arg(s.nodes.size())
                 .arg(pruned ? QObject::tr(" (%1 pruned)").arg(pruned) : QString())
                 .arg(s.accepted_count());
  if (i < int(t.pieces.size()))
    lines << QObject::tr("text: “%1” (tokens %2–%3)")
                 .arg(QString::fromStdString(t.pieces[size_t(i)]).replace('\n', QStringLiteral("⏎")))
                 .arg(t.tokens_before[size_t(i)] + 1)
                 .arg(t.tokens_before[size_t(i)] + int(s.committed.size()));
  lines << QObject::tr("draft %1 ms · verify %2 ms · %3 target forwards")
               .arg(ms(s.timings.draft_us))
               .arg(ms(s.timings.verify_forward_us + s.timings.verify_us))
               .arg(s.target_forwards);
  if (!std::isnan(s.experts_per_layer))
    lines << QObject::tr("%1 experts per layer ran (a mixture of experts: every expert a row picks is read)")
                 .arg(double(s.experts_per_layer), 0, 'f', 1);
  lines << QObject::tr("click: open in the inspector");
  return lines.join('\n');
}

bool RaceLane::eventFilter(QObject* watched, QEvent* e) {
  if (watched != tree_) return QGroupBox::eventFilter(watched, e);
  if (e->type() == QEvent::ToolTip) {
    const auto* he = static_cast<QHelpEvent*>(e);
    const runs::RunTrace* t = trace();
    const QString tip = t ? describeStep(*t, tree_->currentStep()) : QString();
    if (tip.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(he->globalPos(), tip, tree_);
    return true;
  }
  if (e->type() == QEvent::MouseButtonRelease && static_cast<QMouseEvent*>(e)->button() == Qt::LeftButton &&
      tree_->currentStep() >= 0) {
    emit miniatureClicked(index_, tree_->currentStep());
    return false;
  }
  return QGroupBox::eventFilter(watched, e);
}

}  // namespace specscope::ui
