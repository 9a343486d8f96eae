#include "ui/main/live_pacer.h"

#include <algorithm>

namespace specscope::ui {

LivePacer::LivePacer(Sink text, Sink tree, CpuClock tree_cpu, QObject* parent)
    : QObject(parent),
      text_(std::move(text)),
      tree_(std::move(tree)),
      tree_cpu_(std::move(tree_cpu)),
      budget_(kTreeBudget, kTextIntervalMs, 15.0, kMaxTreeIntervalMs) {
  text_timer_.setSingleShot(true);
  tree_timer_.setSingleShot(true);
  // The text clock must keep its pace while the GUI thread is also painting: a coarse timer may fire up to 5%
  // late, which still leaves 14 updates a second.
  text_timer_.setTimerType(Qt::PreciseTimer);
  connect(&text_timer_, &QTimer::timeout, this, &LivePacer::send_text);
  connect(&tree_timer_, &QTimer::timeout, this, [this] {
    send_trees();
    budget_.frame_drawn(wall_ms(), tree_cpu_());
  });
  since_text_.start();
}

void LivePacer::start(int lanes) {
  text_timer_.stop();
  tree_timer_.stop();
  count_.assign(size_t(std::max(lanes, 0)), 0);
  text_shown_ = tree_shown_ = count_;
  budget_.start(wall_ms(), tree_cpu_());
  first_text_ = true;
}

void LivePacer::stepAdded(int lane, int count) {
  if (lane < 0 || lane >= int(count_.size())) return;
  count_[size_t(lane)] = count;
  if (!enabled_) return;
  // The first text of a run goes at once (the user is waiting for it); then one update per clock tick.
  if (!text_timer_.isActive())
    text_timer_.start(first_text_ ? 0 : int(std::max<qint64>(0, kTextIntervalMs - since_text_.elapsed())));
  if (!tree_timer_.isActive()) tree_timer_.start(int(budget_.next_delay_ms(wall_ms(), tree_cpu_())));
}

void LivePacer::send_text() {
  text_timer_.stop();
  since_text_.restart();
  first_text_ = false;
  for (int l = 0; l < int(count_.size()); ++l)
    for (int& i = text_shown_[size_t(l)]; i < count_[size_t(l)]; ++i) text_(l, i);
}

void LivePacer::send_trees() {
  tree_timer_.stop();
  for (int l = 0; l < int(count_.size()); ++l)
    for (int& i = tree_shown_[size_t(l)]; i < count_[size_t(l)]; ++i) tree_(l, i);
}

void LivePacer::flushTrees() { send_trees(); }

void LivePacer::flush() {
  send_text();
  send_trees();
}

}  // namespace specscope::ui
