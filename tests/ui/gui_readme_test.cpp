// The README's screenshots from a real session of the shipped family (issue 20: "README and the screenshots are
// updated"), and a note added to a live chat's step, under Xvfb: a sampled (T = 0.7, so drafts get rejected) eagle2
// chat answer on assets/models/base with its EAGLE head, recorded; Run > Add note to this step… appends
// "step N: text" to the session's notes and the inspector shows it on that step with no replay open; a note set
// from outside (as `specscope-cli sessions note` sets it) appears when the window comes back to the front. Then
// the timeline zoomed with a range selected beside the statistics filtered to it (linked-views.png), and presenter
// mode on the noted step (presenter-mode.png), saved in SPECSCOPE_SCREENSHOTS (docs/screenshots/ holds the
// committed copies).
#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QMenuBar>
#include <QPainter>
#include <QSignalSpy>
#include <QTest>
#include <QWheelEvent>

#include "sessions/reader.h"
#include "tests/session_test_support.h"
#include "tests/ui/gui_main.h"
#include "ui/engine/step_focus.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/main/live_notes.h"
#include "ui/main/main_window.h"
#include "ui/main/presenter_mode.h"
#include "ui/views/chat_view.h"
#include "ui/views/settings_view.h"
#include "ui/views/statistics_view.h"

using namespace specscope;
using namespace specscope::ui;
namespace fs = std::filesystem;

namespace {

const char* kPrompt = "What does the word harbor mean?";
const QString kNote = "the head's second guess was the one the target took";

void settle(int ms = 100) {
  QTest::qWait(ms);
  QApplication::processEvents();
}

QString shots_dir() {
  QString d = qEnvironmentVariable("SPECSCOPE_SCREENSHOTS", QDir::tempPath() + "/specscope-screenshots");
  QDir().mkpath(d);
  return d;
}

// A README image: at most `width` pixels wide, in 256 colours (a UI screenshot loses nothing visible and the file
// stays well under the README's 250 KB budget).
QImage for_readme(const QImage& shot, int width) {
  const QImage scaled = shot.width() > width ? shot.scaledToWidth(width, Qt::SmoothTransformation) : shot;
  return scaled.convertToFormat(QImage::Format_Indexed8, Qt::ThresholdDither | Qt::PreferDither);
}

QAction* menu_action(MainWindow& w, const QString& menu, const QString& text) {
  for (QAction* top : w.menuBar()->actions())
    if (top->menu() && top->text().remove('&') == menu)
      for (QAction* a : top->menu()->actions())
        if (a->text() == text) return a;
  return nullptr;
}

void send_mouse(QWidget* w, QEvent::Type type, QPoint at, Qt::MouseButton button, Qt::MouseButtons buttons,
                Qt::KeyboardModifiers mods = {}) {
  QMouseEvent e(type, QPointF(at), QPointF(w->mapToGlobal(at)), button, buttons, mods);
  QApplication::sendEvent(w, &e);
}

void draw(TreeInspectorWidget* t) {
  t->repaint();
  (void)t->frame();
  settle(30);
}

// The first decoding step at or after `from` where the target rejected a draft (sampling at T = 0.7 makes some).
int step_with_rejection(const std::vector<StepRecord>& steps, int from) {
  for (int i = std::max(1, from); i < int(steps.size()); ++i)
    for (const auto& n : steps[size_t(i)].nodes)
      if (n.decision == NodeDecision::Rejected && !steps[size_t(i)].accepted_path.empty()) return i;
  return -1;
}

}  // namespace

TEST(GuiReadme, RealEagle2ChatANoteOnALiveStepAndTheReadmeScreenshots) {
  const fs::path dir = test::fresh_dir("gui-readme");
  const std::string db = (dir / "sessions.db").string();
  MainWindow w;
  AppSettings a = SettingsView::defaults();
  a.method = "eagle2";
  a.max_tokens = 96;
  a.sampling.temperature = 0.7f;
  a.sampling.seed = 7;  // the same answer every time the screenshots are made
  a.session_db = QString::fromStdString(db);
  a.record = true;
  a.dark = false;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  ASSERT_FALSE(w.settingsView()->settings().eagle_head.isEmpty()) << "the default family ships an EAGLE head";
  w.resize(1500, 900);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));

  QSignalSpy done(&w, &MainWindow::jobDone);
  w.chat()->setInput(kPrompt);
  w.chat()->send();
  ASSERT_TRUE(done.wait(300000)) << "the chat answer did not finish";
  settle(300);
  const qint64 id = done.takeFirst().at(0).toLongLong();
  ASSERT_GT(id, 0) << "the answer was recorded";
  const auto& steps = w.traces().lane(0).steps;
  ASSERT_GT(steps.size(), 12u);
  EXPECT_EQ(w.traces().lane(0).method, "eagle2");

  // A live chat (no replay open): Run > Add note to this step… on a step where a draft was rejected.
  TreeInspectorWidget* insp = w.inspector();
  const int noted = step_with_rejection(steps, int(steps.size()) / 3);
  ASSERT_GE(noted, 0) << "no step rejected a draft at T = 0.7";
  insp->setCurrentStep(noted);
  settle();
  ASSERT_EQ(insp->currentStep(), noted);
  const int noted_number = steps[size_t(noted)].step;
  EXPECT_EQ(insp->currentNote(), "");
  ASSERT_NE(menu_action(w, "Run", "Add note to this step…"), nullptr);
  auto* notes = w.findChild<LiveNotes*>();
  ASSERT_NE(notes, nullptr);
  EXPECT_EQ(notes->sessionId(), id);
  EXPECT_EQ(notes->addNoteToCurrentStep(kNote), QString());
  settle();
  EXPECT_EQ(w.statusText(), QString("Note added to step %1 of session %2").arg(noted_number).arg(id));
  EXPECT_EQ(insp->currentNote(), kNote) << "the inspector shows the new note on its step, live";
  // In the session's notes as `sessions note` writes them (the same call), on that step only.
  const std::string stored = sessions::SessionReader(db).session(id).meta.notes;
  EXPECT_EQ(stored, "step " + std::to_string(noted_number) + ": " + kNote.toStdString());
  insp->setCurrentStep(noted - 1);
  settle();
  EXPECT_EQ(insp->currentNote(), "");

  // Notes written from outside while the app runs (a terminal's `specscope-cli sessions note`): shown once the
  // window is back in front; the first note is kept, since Add note appends.
  const std::string outside = stored + "\nsteps 1-2: the first steps draft the answer's opening";
  ASSERT_TRUE(sessions::set_session_notes(db, id, outside));
  w.activateWindow();
  ASSERT_TRUE(QTest::qWaitForWindowActive(&w));
  QEvent activation(QEvent::ActivationChange);
  QApplication::sendEvent(&w, &activation);
  insp->setCurrentStep(1);
  settle();
  EXPECT_EQ(insp->currentNote(), "the first steps draft the answer's opening");

  // linked-views.png: the timeline zoomed about the noted step with a range selected around it, and the
  // statistics filtered to that range.
  insp->setCurrentStep(noted);
  draw(insp);
  const QRect bars = insp->timelineBars();
  ASSERT_FALSE(bars.isEmpty());
  const QPoint over = insp->timelineBarPosition(noted);
  ASSERT_GE(over.x(), 0);
  {
    QWheelEvent e(QPointF(over), QPointF(insp->mapToGlobal(over)), QPoint(), QPoint(0, 240), Qt::NoButton,
                  Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(insp, &e);
  }
  settle();
  draw(insp);
  ASSERT_TRUE(insp->timelineZoomed());
  const int first = std::max(1, noted - 3), last = std::min(int(steps.size()) - 1, noted + 4);
  const QPoint pa = insp->timelineBarPosition(first), pb = insp->timelineBarPosition(last);
  ASSERT_GE(pa.x(), 0);
  ASSERT_GE(pb.x(), 0);
  send_mouse(insp, QEvent::MouseButtonPress, pa, Qt::LeftButton, Qt::LeftButton, Qt::ShiftModifier);
  send_mouse(insp, QEvent::MouseMove, pb, Qt::NoButton, Qt::LeftButton, Qt::ShiftModifier);
  send_mouse(insp, QEvent::MouseButtonRelease, pb, Qt::LeftButton, Qt::NoButton, Qt::ShiftModifier);
  settle();
  ASSERT_EQ(w.stepFocus()->range(), (StepSelection{0, first, last}));
  insp->setCurrentStep(noted);
  draw(insp);
  const QImage timeline = w.grab().toImage();
  w.showTab("statistics");
  settle(300);
  EXPECT_FALSE(w.statistics()->rangeText().isEmpty());
  EXPECT_DOUBLE_EQ(w.statistics()->shownTau(0), runs::compute_statistics(steps, runs::StepSpan{first, last}).tau);
  const QImage statistics = w.grab().toImage();
  {  // the two views one above the other, each at the README's width
    const int width = 1100;
    const QImage top = timeline.scaledToWidth(width, Qt::SmoothTransformation);
    const QImage bottom = statistics.scaledToWidth(width, Qt::SmoothTransformation);
    QImage both(width, top.height() + bottom.height() + 6, QImage::Format_RGB32);
    both.fill(Qt::white);
    QPainter p(&both);
    p.drawImage(0, 0, top);
    p.drawImage(0, top.height() + 6, bottom);
    p.end();
    const QString path = shots_dir() + "/linked-views.png";
    ASSERT_TRUE(for_readme(both, width).save(path));
    EXPECT_LE(QFileInfo(path).size(), 250 * 1024) << path.toStdString();
  }

  // presenter-mode.png: presenter mode on the noted step, the note large in its bar.
  w.showTab("chat");
  w.stepFocus()->clearRange();
  w.presenter()->setActive(true);
  insp->setCurrentStep(noted);
  settle(300);
  draw(insp);
  EXPECT_EQ(insp->currentNote(), kNote);
  EXPECT_TRUE(w.presenter()->noteText().contains(kNote)) << w.presenter()->noteText().toStdString();
  const QString path = shots_dir() + "/presenter-mode.png";
  ASSERT_TRUE(for_readme(w.grab().toImage(), 1200).save(path));
  EXPECT_LE(QFileInfo(path).size(), 250 * 1024) << path.toStdString();
  w.presenter()->setActive(false);

  // An empty note is refused, with the reason in the status bar, and writes nothing.
  EXPECT_EQ(notes->addNoteToCurrentStep("   "), "Add note: the note is empty");
  EXPECT_EQ(w.statusText(), "Add note: the note is empty");
  EXPECT_EQ(sessions::SessionReader(db).session(id).meta.notes, outside);
}

SPECSCOPE_GUI_TEST_MAIN("readme")
