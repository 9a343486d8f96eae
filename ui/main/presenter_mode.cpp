#include "ui/main/presenter_mode.h"

#include <spdlog/spdlog.h>

#include <QAction>
#include <QApplication>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QPushButton>
#include <QToolBar>

#include "ui/engine/replay_controller.h"
#include "ui/engine/step_focus.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/main/main_window.h"
#include "ui/main/theme.h"
#include "ui/views/chat_view.h"
#include "ui/views/compare_view.h"
#include "ui/views/settings_view.h"
#include "ui/views/statistics_view.h"

namespace specscope::ui {

PresenterMode::PresenterMode(MainWindow* window, StepFocus* focus, const runs::TraceStore* traces)
    : QObject(window), window_(window), focus_(focus), traces_(traces) {
  toggle_ = new QAction(tr("Presenter mode"), this);
  toggle_->setObjectName("presenterModeAction");
  toggle_->setCheckable(true);
  toggle_->setShortcuts({QKeySequence(Qt::Key_F5), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P)});
  toggle_->setToolTip(tr("Large fonts, high contrast, auto-play at a chosen pace, and the session's notes on their steps"));
  connect(toggle_, &QAction::toggled, this, &PresenterMode::setActive);

  // Space plays and pauses only while presenting (a text field still takes its spaces: it claims the key first).
  space_ = new QAction(tr("Play / pause (presenter)"), this);
  space_->setShortcut(QKeySequence(Qt::Key_Space));
  space_->setEnabled(false);
  connect(space_, &QAction::triggered, this, &PresenterMode::playPause);
  window->addAction(space_);

  bar_ = new QToolBar(tr("Presenter"), window);
  bar_->setObjectName("presenterBar");
  bar_->setMovable(false);
  play_ = new QPushButton(tr("Play"));
  play_->setObjectName("presenterPlay");
  play_->setToolTip(tr("Auto-play the replayed session at the pace (Space)"));
  pace_ = new QDoubleSpinBox;
  pace_->setObjectName("presenterPace");
  pace_->setRange(0.25, 30);
  pace_->setSingleStep(0.5);
  pace_->setDecimals(2);
  pace_->setValue(2);
  pace_->setSuffix(tr(" steps/s"));
  note_ = new QLabel;
  note_->setObjectName("presenterNote");
  note_->setWordWrap(true);
  note_->setTextFormat(Qt::PlainText);
  note_->setMinimumWidth(400);
  bar_->addWidget(play_);
  bar_->addWidget(new QLabel(tr("  pace ")));
  bar_->addWidget(pace_);
  bar_->addSeparator();
  bar_->addWidget(note_);
  window->addToolBar(Qt::TopToolBarArea, bar_);
  bar_->hide();

  connect(play_, &QPushButton::clicked, this, &PresenterMode::playPause);
  connect(pace_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    if (active_) window_->replay()->setPace(v);
  });
  connect(window->replay(), &ReplayController::playingChanged, this,
          [this](bool playing) { play_->setText(playing ? tr("Pause") : tr("Play")); });
  connect(focus_, &StepFocus::currentChanged, this, &PresenterMode::show_note);
}

void PresenterMode::setActive(bool on) {
  if (on == active_) return;
  active_ = on;
  {
    const QSignalBlocker b(toggle_);
    toggle_->setChecked(on);
  }
  space_->setEnabled(on);
  bar_->setVisible(on);
  if (on) {
    normal_font_ = QApplication::font();
    QFont big = normal_font_;
    if (big.pointSizeF() > 0) big.setPointSizeF(big.pointSizeF() * kFontScale);
    else big.setPixelSize(int(big.pixelSize() * kFontScale));
    QApplication::setFont(big);
    window_->replay()->setPace(pace_->value());
    applyLook();
  } else {
    QApplication::setFont(normal_font_);
    window_->replay()->setPace(0);
    for (TreeInspectorWidget* t : {window_->inspector(), window_->compare()->laneInspector()}) {
      t->setHighContrast(false);
      t->setFontScale(1.0f);
    }
    window_->applyTheme(window_->settingsView()->settings().dark);  // the settings' theme, as before presenting
  }
  spdlog::info("presenter mode {}", on ? "on" : "off");
  show_note();
}

void PresenterMode::applyLook() {
  if (!active_) return;
  qApp->setPalette(high_contrast_palette());
  window_->chat()->setDark(true);
  window_->compare()->setDark(true);
  window_->statistics()->setDark(true);
  for (TreeInspectorWidget* t : {window_->inspector(), window_->compare()->laneInspector()}) {
    t->setHighContrast(true);
    t->setFontScale(float(kFontScale));
  }
  QFont f = note_->font();
  f.setBold(true);
  note_->setFont(f);
  QPalette p = note_->palette();
  p.setColor(QPalette::WindowText, high_contrast_colors().highlight);
  note_->setPalette(p);
}

void PresenterMode::setNotes(const SessionNotes& notes) {
  notes_ = notes;
  show_note();
}

QString PresenterMode::noteText() const { return note_->text(); }
double PresenterMode::pace() const { return pace_->value(); }
void PresenterMode::setPace(double steps_per_second) { pace_->setValue(steps_per_second); }

void PresenterMode::playPause() {
  ReplayController* r = window_->replay();
  if (!r->isOpen()) {
    note_->setText(tr("Open a recorded session (Sessions tab) to play it at this pace."));
    return;
  }
  if (r->playing()) {
    r->pause();
    return;
  }
  if (active_) r->setPace(pace_->value());
  r->play();
}

void PresenterMode::show_note() {
  QString text;
  const int lane = focus_->lane(), step = focus_->step();
  if (lane >= 0 && lane < traces_->lanes() && step >= 0 && step < int(traces_->lane(lane).steps.size())) {
    const int number = traces_->lane(lane).steps[size_t(step)].step;
    const std::string note = notes_.for_step(number);
    if (!note.empty()) text = tr("Step %1: %2").arg(number).arg(QString::fromStdString(note));
  }
  if (text.isEmpty() && !notes_.general.empty()) text = QString::fromStdString(notes_.general);
  note_->setText(text);
}

}  // namespace specscope::ui
