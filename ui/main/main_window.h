#pragma once
// The main window: Chat (with the tree inspector beside it), Compare, Statistics, Sessions and Settings tabs;
// the engine on its worker thread; replay of recorded sessions into the same views; menus, shortcuts,
// exports, themes, and a status bar that names the model, the backend and device, and the session store. It
// owns the one runs::TraceStore the views read (live or replayed steps), and turns the Chat's send and the
// Compare tab's lanes into runs::Jobs for the engine worker.
#include <QMainWindow>
#include <memory>

#include "runs/trace_store.h"

namespace specscope::ui {

class ChatView;
class CompareView;
class StatisticsView;
class SessionLibraryView;
class SettingsView;
class TreeInspectorWidget;
class ReplayController;
class StepFocus;
class PresenterMode;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // For tests and scripted screenshots.
  ChatView* chat() const;
  CompareView* compare() const;
  StatisticsView* statistics() const;
  SessionLibraryView* library() const;
  SettingsView* settingsView() const;
  TreeInspectorWidget* inspector() const;
  ReplayController* replay() const;
  StepFocus* stepFocus() const;        // the step shown and the range selected, shared by every view
  PresenterMode* presenter() const;    // View > Presenter mode
  // The runs every view draws: the live job's lanes, or the replayed session's.
  const runs::TraceStore& traces() const;
  bool busy() const;
  qint64 lastSessionId() const;
  void showTab(const QString& name);  // chat | compare | statistics | sessions | settings
  void openSession(qint64 id);        // replay a recorded session
  void runCompare();
  void stop();
  void applyTheme(bool dark);
  // Off: steps are kept but drawn only when the run ends (View > Draw runs live), for timings free of drawing.
  void setLiveDrawing(bool on);
  QString statusText() const;  // the status bar's message (errors, notes, the last run's summary)
  QString modelText() const;   // the status bar's model and device
  QString aboutText() const;   // Help > About
  QString shortcutsText() const;  // Help > Keyboard shortcuts, from the menus' own actions
  // File > Export as web page without its file dialog: the replayed session, else the last one recorded, as one
  // self-contained HTML file (sessions/html/html_export.h). Returns "" on success, else the error it reported.
  // first_step..last_step (StepRecord numbers, >= 0): only those steps of every run, as `--steps A-B` exports them.
  QString exportWebPage(const QString& path, int first_step = -1, int last_step = -1);
  // File > Export selected range as web page without its dialog: the steps selected on a timeline.
  QString exportSelectedRangeWebPage(const QString& path);

 signals:
  void jobDone(qint64 session_id);  // after a live chat/compare job finished (tests wait on it)

 protected:
  void closeEvent(QCloseEvent* e) override;

 private:
  void show_step(int lane, int index);  // step `index` of `traces` lane `lane`, to the views
  void show_text(int lane, int index);  // ... to the text views only (the chat, a lane's text and stat line)
  void show_tree(int lane, int index);  // ... to the tree views only (the inspector, a lane's miniature)
  bool showing_race() const;            // the steps are a race's lanes (live or replayed), not a chat answer
  void report_error(const QString& message);  // status bar only: never a blocking dialog
  void close_replay();  // also ends a chat answer the replay was still showing, so the chat is usable
  void job_starting(const QString& what);  // clears what the status bar said about the previous job
  void add_help_menu();
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace specscope::ui
