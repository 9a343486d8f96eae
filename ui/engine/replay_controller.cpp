#include "ui/engine/replay_controller.h"

#include <algorithm>

#include "sessions/reader.h"

namespace specscope::ui {

ReplayController::ReplayController(QObject* parent) : QObject(parent) {
  timer_.setSingleShot(true);
  connect(&timer_, &QTimer::timeout, this, [this] {
    stepForward();
    if (position_ < length()) schedule();
    else emit playingChanged(false);
  });
}

void ReplayController::open(const QString& db_path, qint64 session_id) {
  pause();
  sessions::SessionReader reader(db_path.toStdString());
  sessions::SessionRow s = reader.session(session_id);
  std::vector<sessions::RunRow> runs, references;
  if (s.meta.kind == "compare") {
    // The first prompt's runs: its lanes in lane order (recorded with their index since races; before, in the
    // order they ran), and the targets' reference runs apart.
    for (const auto& r : s.runs) {
      if (r.meta.prompt != s.runs.front().meta.prompt) continue;
      if (r.meta.lane && *r.meta.lane < 0) references.push_back(r);
      else if (runs.size() < 4) runs.push_back(r);
    }
    std::stable_sort(runs.begin(), runs.end(), [](const sessions::RunRow& a, const sessions::RunRow& b) {
      return a.meta.lane.value_or(0) < b.meta.lane.value_or(0);
    });
  } else if (!s.runs.empty()) {
    runs.push_back(s.runs.back());
  }
  std::vector<runs::RunTrace> lanes;
  for (const auto& r : runs) {
    runs::RunTrace t;
    t.method = r.meta.method.name;
    t.label = r.meta.label.empty() ? r.meta.method.name : r.meta.label;
    t.target = r.meta.target.path;
    t.greedy = r.meta.sampling.greedy();
    reader.for_each_step(r.id, 0, r.step_count, [&](sessions::RecordedStep&& st) {
      t.pieces.push_back(st.text_piece);
      t.steps.push_back(std::move(st.record));
    });
    if (r.outcome) t.summary = r.outcome->summary;
    lanes.push_back(std::move(t));
  }
  session_ = std::move(s);
  lanes_ = std::move(lanes);
  lane_runs_ = std::move(runs);
  reference_runs_ = std::move(references);
  position_ = 0;
  emit cleared();
  emit positionChanged(0, length());
}

void ReplayController::close() {
  pause();
  lanes_.clear();
  lane_runs_.clear();
  reference_runs_.clear();
  position_ = 0;
}

std::vector<runs::Lane> ReplayController::laneSpecs() const {
  std::vector<runs::Lane> out;
  for (size_t l = 0; l < lanes_.size(); ++l) out.push_back({lanes_[l].label, lane_runs_[l].meta.method, lanes_[l].target});
  return out;
}

int ReplayController::length() const {
  size_t n = 0;
  for (auto& l : lanes_) n = std::max(n, l.steps.size());
  return int(n);
}

void ReplayController::emit_step(int index) {
  for (size_t l = 0; l < lanes_.size(); ++l) {
    const auto& t = lanes_[l];
    if (index < int(t.steps.size())) {
      emit step(int(l), t.steps[size_t(index)], QString::fromStdString(t.pieces[size_t(index)]));
      if (index + 1 == int(t.steps.size())) emit laneFinished(int(l));
    }
  }
}

void ReplayController::stepForward() {
  if (position_ >= length()) return;
  emit_step(position_++);
  emit positionChanged(position_, length());
}

void ReplayController::seek(int position) {
  position = std::clamp(position, 0, length());
  if (position < position_) {
    emit cleared();
    position_ = 0;
  }
  while (position_ < position) emit_step(position_++);
  emit positionChanged(position_, length());
}

void ReplayController::schedule() {
  if (pace_ > 0) {
    timer_.start(std::max(1, int(1000.0 / pace_)));
    return;
  }
  // The next step waits as long as its slowest lane took when it was recorded, divided by the speed.
  int64_t us = 0;
  for (auto& t : lanes_)
    if (position_ < int(t.steps.size())) us = std::max(us, t.steps[size_t(position_)].timings.total_us());
  const int ms = speed_ > 0 ? int(std::clamp<double>(double(us) / 1000.0 / speed_, 1.0, 5000.0)) : 0;
  timer_.start(ms);
}

void ReplayController::play() {
  if (!isOpen()) return;
  if (position_ >= length()) seek(0);
  schedule();
  emit playingChanged(true);
}

void ReplayController::pause() {
  if (!timer_.isActive()) return;
  timer_.stop();
  emit playingChanged(false);
}

void ReplayController::setSpeed(double speed) { speed_ = speed; }

void ReplayController::setPace(double steps_per_second) {
  pace_ = std::max(0.0, steps_per_second);
  if (timer_.isActive()) schedule();  // the new pace now, not after a step at the old one
}

}  // namespace specscope::ui
