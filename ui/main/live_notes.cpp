#include "ui/main/live_notes.h"

#include <spdlog/spdlog.h>

#include <QAction>
#include <QEvent>
#include <QInputDialog>

#include "sessions/reader.h"
#include "ui/engine/replay_controller.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/main/linked_views.h"
#include "ui/main/main_window.h"
#include "ui/views/chat_view.h"
#include "ui/views/compare_view.h"
#include "ui/views/settings_view.h"

namespace specscope::ui {

namespace {

// The inspector showing the current step: the compare tab's lane inspector for a race, the chat's otherwise
// (as linked_views.cpp routes steps).
TreeInspectorWidget* current_inspector(const MainWindow& w) {
  return w.traces().lanes() >= 2 ? w.compare()->laneInspector() : w.inspector();
}

}  // namespace

LiveNotes::LiveNotes(MainWindow* window, PresenterMode* presenter)
    : QObject(window), window_(window), presenter_(presenter) {
  add_ = new QAction(tr("Add note to this step…"), this);
  add_->setObjectName("addStepNoteAction");
  add_->setToolTip(tr("Appends \"step N: your text\" to the session's notes (as specscope-cli sessions note does)"));
  connect(add_, &QAction::triggered, this, &LiveNotes::ask_for_note);
  // Connected after the main window's own handlers, so these run once the replay, the chat's session and the
  // notes those handlers set are in place.
  connect(window, &MainWindow::jobDone, this, &LiveNotes::reload);
  connect(window->replay(), &ReplayController::cleared, this, &LiveNotes::reload);
  connect(window->chat(), &ChatView::generateRequested, this, &LiveNotes::reload);
  connect(window->chat(), &ChatView::newChatStarted, this, &LiveNotes::reload);
  window->installEventFilter(this);
}

std::string LiveNotes::store_path() const { return window_->settingsView()->settings().session_db.toStdString(); }

qint64 LiveNotes::sessionId() const {
  if (window_->replay()->isOpen()) return window_->replay()->session().id;
  // A race: the job's session once it ended (while it runs, the last session is the previous job's).
  if (window_->traces().lanes() >= 2) return window_->busy() ? 0 : window_->lastSessionId();
  return window_->chat()->sessionId();
}

void LiveNotes::reload() {
  const qint64 id = sessionId();
  std::string notes;
  if (id > 0) {
    try {
      notes = sessions::SessionReader(store_path()).session(id).meta.notes;
    } catch (const std::exception& e) {
      // The store may be gone or replaced; the session then has no notes to show.
      spdlog::debug("notes of session {}: {}", id, e.what());
    }
  }
  show_session_notes(*window_, *presenter_, notes);
}

QString LiveNotes::addNoteToCurrentStep(const QString& text) {
  const QString line = text.simplified();  // one line: a note's step prefix holds for its line only
  const StepRecord* step = current_inspector(*window_)->currentRecord();
  const qint64 id = sessionId();
  QString error;
  if (!step) error = tr("Add note: no step is shown");
  else if (id <= 0) error = tr("Add note: this run is not recorded in a session (yet: a chat's session exists once its answer ends)");
  else if (line.isEmpty()) error = tr("Add note: the note is empty");
  if (error.isEmpty()) {
    try {
      const std::string path = store_path();
      std::string notes = sessions::SessionReader(path).session(id).meta.notes;
      if (!notes.empty() && notes.back() != '\n') notes += '\n';
      notes += "step " + std::to_string(step->step) + ": " + line.toStdString();
      if (!sessions::set_session_notes(path, id, notes)) error = tr("Add note: session %1 is no longer in the store").arg(id);
    } catch (const std::exception& e) {
      error = tr("Add note: %1").arg(QString::fromStdString(e.what()));
    }
  }
  if (!error.isEmpty()) {
    spdlog::warn("{}", error.toStdString());
    emit message(error);
    return error;
  }
  spdlog::info("note added to step {} of session {}", step->step, id);
  reload();
  emit message(tr("Note added to step %1 of session %2").arg(step->step).arg(id));
  return {};
}

void LiveNotes::ask_for_note() {
  const StepRecord* step = current_inspector(*window_)->currentRecord();
  if (!step) {
    addNoteToCurrentStep(QString());  // says why there is nothing to note
    return;
  }
  bool ok = false;
  const QString text = QInputDialog::getText(window_, tr("Add note to step %1").arg(step->step),
                                             tr("Note on step %1 (saved in the session's notes):").arg(step->step),
                                             QLineEdit::Normal, QString(), &ok);
  if (ok) addNoteToCurrentStep(text);
}

bool LiveNotes::eventFilter(QObject* watched, QEvent* event) {
  // Back to the window: the notes may have been edited from a terminal meanwhile.
  if (watched == window_ && event->type() == QEvent::ActivationChange && window_->isActiveWindow()) reload();
  return QObject::eventFilter(watched, event);
}

}  // namespace specscope::ui
