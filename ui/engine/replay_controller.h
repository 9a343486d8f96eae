#pragma once
// Replays a recorded session into the same views a live run feeds, without the model: play/pause, single
// step, speed, a fixed pace (presenter mode: so many steps a second, whatever each took when recorded), and
// seeking (a backward seek rebuilds the views from the first step). A chat or run session
// replays its last run; a comparison replays the runs of its first prompt as lanes, side by side.
#include <QObject>
#include <QTimer>
#include <vector>

#include "sessions/records.h"
#include "runs/job.h"
#include "runs/trace_store.h"

namespace specscope::ui {

class ReplayController : public QObject {
  Q_OBJECT
 public:
  explicit ReplayController(QObject* parent = nullptr);
  // Loads every step of the lanes to replay. Throws InputError (missing, corrupt, newer store...).
  void open(const QString& db_path, qint64 session_id);
  bool isOpen() const { return !lanes_.empty(); }
  void close();
  const sessions::SessionRow& session() const { return session_; }
  // The recorded lanes: whole runs (steps, pieces, summaries), the source the views are fed from step by step.
  const std::vector<runs::RunTrace>& lanes() const { return lanes_; }
  const std::vector<sessions::RunRow>& laneRuns() const { return lane_runs_; }
  std::vector<runs::Lane> laneSpecs() const;  // as the Compare tab's lane editors take them
  const std::vector<sessions::RunRow>& referenceRuns() const { return reference_runs_; }
  int length() const;    // steps of the longest lane
  int position() const { return position_; }  // steps shown so far
  bool playing() const { return timer_.isActive(); }
  double speed() const { return speed_; }
  double pace() const { return pace_; }

 public slots:
  void play();
  void pause();
  void stepForward();
  void seek(int position);  // show exactly the first `position` steps
  void setSpeed(double speed);  // 1 = recorded pace; <= 0: as fast as the UI can draw
  // > 0: this many steps a second, the recorded timings and the speed ignored (presenter mode's auto-play);
  // 0: back to the recorded pace times the speed. Takes effect from the next step.
  void setPace(double steps_per_second);

 signals:
  void cleared();  // views must forget what they show
  void step(int lane, const specscope::StepRecord& step, const QString& piece);
  void laneFinished(int lane);
  void positionChanged(int position, int length);
  void playingChanged(bool playing);

 private:
  void emit_step(int index);
  void schedule();
  QTimer timer_;
  sessions::SessionRow session_;
  std::vector<runs::RunTrace> lanes_;
  std::vector<sessions::RunRow> lane_runs_, reference_runs_;
  int position_ = 0;
  double speed_ = 1.0;
  double pace_ = 0.0;
};

}  // namespace specscope::ui
