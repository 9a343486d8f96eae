#pragma once
// Presenter mode (View > Presenter mode, F5 or Ctrl+Shift+P), for teaching from a projector: the app's font and
// the tree inspectors' text larger, the high-contrast theme (theme.h: black and white, accept and reject in strong
// colours, 7:1 or more), a toolbar that auto-plays the replayed session at a chosen pace (steps a second; Space
// plays and pauses) and shows, large, the session's notes on the step being shown (step_notes.h). Off, the app
// is as it was: its font, its light or dark theme, the replay at its recorded pace.
#include <QFont>
#include <QObject>

#include "runs/trace_store.h"
#include "ui/engine/step_notes.h"

class QAction;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QToolBar;

namespace specscope::ui {

class MainWindow;
class StepFocus;

class PresenterMode : public QObject {
  Q_OBJECT
 public:
  static constexpr double kFontScale = 1.6;

  // Adds its toolbar (hidden) and its Space shortcut to `window`; the caller puts toggleAction() in a menu.
  PresenterMode(MainWindow* window, StepFocus* focus, const runs::TraceStore* traces);
  QAction* toggleAction() const { return toggle_; }
  bool active() const { return active_; }
  void setActive(bool on);
  // Re-applies the look (the main window's theme changed under it: a settings change while presenting).
  void applyLook();
  void setNotes(const SessionNotes& notes);  // the replayed session's (empty: none)
  QString noteText() const;                  // what the toolbar shows for the current step
  double pace() const;                       // steps a second
  void setPace(double steps_per_second);
  void playPause();                          // Space: the replay's play/pause at the pace

 private:
  void show_note();
  MainWindow* window_;
  StepFocus* focus_;
  const runs::TraceStore* traces_;
  QAction* toggle_;
  QAction* space_;
  QToolBar* bar_;
  QDoubleSpinBox* pace_;
  QPushButton* play_;
  QLabel* note_;
  SessionNotes notes_;
  QFont normal_font_;
  bool active_ = false;
};

}  // namespace specscope::ui
