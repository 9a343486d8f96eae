#include "ui/views/race_cursor.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <algorithm>

namespace specscope::ui {

RaceCursor::RaceCursor(QWidget* parent) : QWidget(parent) {
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 0);
  auto* title = new QLabel(tr("Text position:"));
  slider_ = new QSlider(Qt::Horizontal);
  slider_->setObjectName("raceCursor");
  slider_->setToolTip(tr("Every lane shows the step that produced this token of its text"));
  slider_->setPageStep(8);
  label_ = new QLabel;
  label_->setMinimumWidth(label_->fontMetrics().horizontalAdvance("token 8888 of 8888"));
  live_button_ = new QPushButton(tr("Live"));
  live_button_->setCheckable(true);
  live_button_->setToolTip(tr("Follow the newest step of every lane"));
  row->addWidget(title);
  row->addWidget(slider_, 1);
  row->addWidget(label_);
  row->addWidget(live_button_);
  // Only the user's moves leave live; setTokenCount moves the handle with signals blocked.
  connect(slider_, &QSlider::valueChanged, this, [this](int v) { setToken(v); });
  connect(live_button_, &QPushButton::toggled, this, [this](bool on) { setLive(on); });
  reset();
}

void RaceCursor::reset() {
  tokens_ = 0;
  {
    const QSignalBlocker b(slider_);
    slider_->setRange(0, 0);
    slider_->setValue(0);
  }
  setLive(true);
}

void RaceCursor::setTokenCount(int tokens) {
  tokens_ = std::max(0, tokens);
  const QSignalBlocker b(slider_);
  slider_->setRange(0, std::max(0, tokens_ - 1));
  if (live_) slider_->setValue(slider_->maximum());
  update_label();
}

int RaceCursor::token() const { return live_ ? -1 : slider_->value(); }

void RaceCursor::setToken(int token) {
  {
    const QSignalBlocker b(slider_);
    slider_->setValue(std::clamp(token, 0, slider_->maximum()));
  }
  if (live_) {
    live_ = false;
    const QSignalBlocker b(live_button_);
    live_button_->setChecked(false);
    emit liveChanged(false);
  }
  update_label();
  emit tokenChanged(slider_->value());
}

void RaceCursor::setLive(bool live) {
  {
    const QSignalBlocker b(live_button_);
    live_button_->setChecked(live);
  }
  const bool changed = live != live_;
  live_ = live;
  if (live) {
    const QSignalBlocker b(slider_);
    slider_->setValue(slider_->maximum());
  }
  update_label();
  if (changed) emit liveChanged(live);
}

void RaceCursor::update_label() {
  label_->setText(tokens_ == 0 ? tr("no tokens")
                  : live_      ? tr("live, %1 tokens").arg(tokens_)
                               : tr("token %1 of %2").arg(slider_->value() + 1).arg(tokens_));
}

}  // namespace specscope::ui
