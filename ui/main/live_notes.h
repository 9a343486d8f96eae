#pragma once
// The notes of the session on screen, live as well as replayed: the replayed session's, else the chat's own
// session (the one its answers are recorded into), else the last job's. They are read from the store again
// whenever they may have changed: a job ended (a new chat session now exists), a chat turn or a new chat started,
// a replay restarted, the window came back to the front (a teacher ran `specscope-cli sessions note` in a
// terminal), or a note was added here.
// Run > Add note to this step… appends "step N: text" (step_notes.h's convention; N the StepRecord's number of the
// step the inspector shows) through sessions::set_session_notes, the store's one notes writer, the same call
// `specscope-cli sessions note` makes.
#include <QObject>
#include <QString>
#include <string>

class QAction;

namespace specscope::ui {

class MainWindow;
class PresenterMode;

class LiveNotes : public QObject {
  Q_OBJECT
 public:
  LiveNotes(MainWindow* window, PresenterMode* presenter);
  QAction* addNoteAction() const { return add_; }  // the caller puts it in a menu
  qint64 sessionId() const;  // the session whose notes are shown; 0: none (an unrecorded or not yet finished chat)
  void reload();             // reads the session's notes from the store and shows them
  // Appends "step N: text" for the step shown (lane 0's, or the inspected lane's in a race) and shows it.
  // Returns "" on success, else why not (also said through message()).
  QString addNoteToCurrentStep(const QString& text);

 signals:
  void message(const QString& text);  // for the status bar: the note added, or why it was not

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void ask_for_note();  // the action: a text box, then addNoteToCurrentStep
  std::string store_path() const;
  MainWindow* window_;
  PresenterMode* presenter_;
  QAction* add_;
};

}  // namespace specscope::ui
