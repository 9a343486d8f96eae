// Presenter mode (issue 20 item 5), under Xvfb, on a session written straight into a store with notes set as
// `specscope-cli sessions note` sets them (no model): View > Presenter mode makes the app's font and the inspector's
// text larger and switches to the high-contrast theme (every text colour 7:1 or more on its background, computed as
// WCAG does, and the inspector really draws black); auto-play advances the replay at the chosen pace (checked by
// progress and order, not exact timing: a busy 2-core machine only makes the timer late), Space pauses it; the
// notes appear on the steps they belong to, in the inspector's header and large in the presenter bar. Off, the app
// is as before.
#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QLabel>
#include <QMenuBar>
#include <QTest>
#include <QToolBar>

#include "sessions/reader.h"
#include "tests/session_test_support.h"
#include "tests/ui/gui_main.h"
#include "tests/ui/replay_fixture.h"
#include "ui/engine/replay_controller.h"
#include "ui/engine/step_notes.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/main/live_notes.h"
#include "ui/main/main_window.h"
#include "ui/main/presenter_mode.h"
#include "ui/main/theme.h"
#include "ui/views/provenance.h"
#include "ui/views/settings_view.h"

using namespace specscope;
using namespace specscope::ui;
namespace fs = std::filesystem;

namespace {

constexpr int kSteps = 60;
const std::string kNotes =
    "Watch how often the first draft is right.\n"
    "step 5: the draft guessed the idiom\n"
    "steps 10-12: depth 3 keeps failing here";

void settle(int ms = 60) {
  QTest::qWait(ms);
  QApplication::processEvents();
}

QAction* view_action(MainWindow& w, const QString& text) {
  for (QAction* top : w.menuBar()->actions())
    if (top->menu() && top->text().remove('&') == "View")
      for (QAction* a : top->menu()->actions())
        if (a->text() == text) return a;
  return nullptr;
}

// Every text role against the background it is drawn on.
double lowest_text_contrast(const QPalette& p) {
  double lowest = 21;
  for (auto [fg, bg] : {std::pair{QPalette::WindowText, QPalette::Window}, {QPalette::Text, QPalette::Base},
                        {QPalette::ButtonText, QPalette::Button}, {QPalette::ToolTipText, QPalette::ToolTipBase},
                        {QPalette::HighlightedText, QPalette::Highlight}, {QPalette::PlaceholderText, QPalette::Base}})
    lowest = std::min(lowest, contrast_ratio(p.color(QPalette::Active, fg), p.color(QPalette::Active, bg)));
  return lowest;
}

}  // namespace

TEST(GuiPresenter, LargeHighContrastAutoPlayAtThePaceAndNotesOnTheirSteps) {
  const fs::path dir = test::fresh_dir("gui-presenter");
  const fs::path db = dir / "s.db";
  const int64_t id = test::replay::record_chat(db, kSteps);
  ASSERT_TRUE(sessions::set_session_notes(db.string(), id, kNotes));  // what `sessions note ID TEXT` does

  MainWindow w;
  AppSettings a = SettingsView::defaults();
  a.session_db = QString::fromStdString(db.string());
  a.record = false;
  a.dark = false;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  w.resize(1500, 900);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  TreeInspectorWidget* insp = w.inspector();
  const double font_before = QApplication::font().pointSizeF();
  const float inspector_font_before = insp->uiFontPixels();
  const QPalette palette_before = QApplication::palette();
  EXPECT_LT(lowest_text_contrast(palette_before), 7.0) << "the light theme is not already a 7:1 theme";

  // View > Presenter mode.
  QAction* toggle = view_action(w, "Presenter mode");
  ASSERT_NE(toggle, nullptr);
  EXPECT_TRUE(toggle->isCheckable());
  EXPECT_TRUE(toggle->shortcuts().contains(QKeySequence(Qt::Key_F5)));
  toggle->trigger();
  settle();
  ASSERT_TRUE(w.presenter()->active());
  auto* bar = w.findChild<QToolBar*>("presenterBar");
  ASSERT_NE(bar, nullptr);
  EXPECT_TRUE(bar->isVisible());

  // Large fonts: the app's and the inspector's.
  EXPECT_GE(QApplication::font().pointSizeF(), font_before * 1.4);
  EXPECT_GE(insp->uiFontPixels(), inspector_font_before * 1.4f);
  // High contrast: every text role 7:1 or more (WCAG AAA), the accept/reject/note colours too, and the inspector
  // really draws on black.
  EXPECT_GE(lowest_text_contrast(QApplication::palette()), 7.0);
  const HighContrastColors& c = high_contrast_colors();
  for (const QColor& fg : {c.text, c.dim, c.accepted, c.rejected, c.bonus, c.highlight, c.note})
    EXPECT_GE(contrast_ratio(fg, c.background), 7.0) << fg.name().toStdString();
  EXPECT_TRUE(insp->highContrast());
  const QImage frame = insp->frame();
  ASSERT_FALSE(frame.isNull());
  EXPECT_EQ(frame.pixelColor(frame.width() / 2, 2), QColor(Qt::black));

  // Auto-play at the pace: open the session and let it play at 8 steps a second.
  w.presenter()->setPace(8);
  w.openSession(id);
  ASSERT_TRUE(w.replay()->isOpen());
  EXPECT_DOUBLE_EQ(w.replay()->pace(), 8.0);
  EXPECT_TRUE(w.replay()->playing());
  QElapsedTimer clock;
  clock.start();
  std::vector<std::pair<qint64, int>> samples;  // (ms, position)
  while (clock.elapsed() < 1500) {
    samples.push_back({clock.elapsed(), w.replay()->position()});
    settle(100);
  }
  const int played = w.replay()->position();
  const double seconds = double(clock.elapsed()) / 1000.0;
  EXPECT_GE(played, 4) << "auto-play barely advanced";
  // Never faster than the pace (a late timer is slower, never faster), never the recorded pace (~1 ms a step:
  // it would have finished at once).
  EXPECT_LE(played, int(8 * seconds) + 3);
  EXPECT_LT(played, kSteps);
  for (size_t i = 1; i < samples.size(); ++i) EXPECT_GE(samples[i].second, samples[i - 1].second);
  // Space pauses (the presenter's shortcut), and it stays where it was.
  w.activateWindow();
  ASSERT_TRUE(QTest::qWaitForWindowActive(&w));
  QTest::keyClick(&w, Qt::Key_Space);
  settle();
  EXPECT_FALSE(w.replay()->playing());
  const int paused_at = w.replay()->position();
  settle(500);
  EXPECT_EQ(w.replay()->position(), paused_at);
  // A faster pace plays faster: at 40 steps a second the rest of the 60 steps go by within a few seconds.
  w.presenter()->setPace(40);
  QTest::keyClick(&w, Qt::Key_Space);
  EXPECT_TRUE(QTest::qWaitFor([&] { return w.replay()->position() == kSteps; }, 20000));
  EXPECT_GT(w.replay()->position(), paused_at);

  // Notes on their steps: the inspector's header and the presenter bar.
  const SessionNotes notes = parse_session_notes(kNotes);
  auto show_step = [&](int index) {
    insp->setCurrentStep(index);
    settle();
    return insp->currentRecord() ? insp->currentRecord()->step : -1;
  };
  ASSERT_EQ(show_step(5), 5);
  EXPECT_EQ(insp->currentNote(), "the draft guessed the idiom");
  EXPECT_EQ(w.presenter()->noteText(), "Step 5: the draft guessed the idiom");
  if (const QByteArray dir = qgetenv("SPECSCOPE_SCREENSHOTS"); !dir.isEmpty()) {
    QDir().mkpath(QString::fromUtf8(dir));
    w.grab().save(QString::fromUtf8(dir) + "/presenter_mode.png");
  }
  auto* note_label = bar->findChild<QLabel*>("presenterNote");
  ASSERT_NE(note_label, nullptr);
  EXPECT_GT(note_label->font().pointSizeF(), font_before * 1.4);
  ASSERT_EQ(show_step(11), 11);
  EXPECT_EQ(insp->currentNote(), "depth 3 keeps failing here");
  EXPECT_TRUE(w.presenter()->noteText().endsWith("depth 3 keeps failing here"));
  ASSERT_EQ(show_step(3), 3);
  EXPECT_EQ(insp->currentNote(), "");
  EXPECT_EQ(w.presenter()->noteText(), QString::fromStdString(notes.general)) << "a step without notes: the session's";

  // Off: the font, the theme and the replay's pace as they were.
  toggle->trigger();
  settle();
  EXPECT_FALSE(w.presenter()->active());
  EXPECT_FALSE(bar->isVisible());
  EXPECT_DOUBLE_EQ(QApplication::font().pointSizeF(), font_before);
  EXPECT_FLOAT_EQ(insp->uiFontPixels(), inspector_font_before);
  EXPECT_FALSE(insp->highContrast());
  EXPECT_EQ(QApplication::palette().color(QPalette::Window), palette_before.color(QPalette::Window));
  EXPECT_DOUBLE_EQ(w.replay()->pace(), 0.0);
  // The notes stay on their steps outside presenter mode too (the header), until the replay is closed.
  EXPECT_EQ(show_step(5), 5);
  EXPECT_EQ(insp->currentNote(), "the draft guessed the idiom");

  // Run > Add note to this step… in the replay: appended to the session's notes as `sessions note` writes them,
  // shown on its step at once, and still there after the replay starts over (it reads the store, not the notes it
  // opened with). Gui.readme adds one to a live chat's step.
  auto* add_note = w.findChild<QAction*>("addStepNoteAction");
  ASSERT_NE(add_note, nullptr);
  auto* live_notes = w.findChild<LiveNotes*>();
  ASSERT_NE(live_notes, nullptr);
  ASSERT_EQ(show_step(20), 20);
  EXPECT_EQ(live_notes->addNoteToCurrentStep("verification rejects the second draft"), QString());
  settle();
  EXPECT_EQ(insp->currentNote(), "verification rejects the second draft");
  EXPECT_EQ(sessions::SessionReader(db.string()).session(id).meta.notes,
            kNotes + "\nstep 20: verification rejects the second draft");
  w.replay()->seek(0);
  w.replay()->seek(w.replay()->length());
  settle();
  EXPECT_EQ(show_step(20), 20);
  EXPECT_EQ(insp->currentNote(), "verification rejects the second draft");
  EXPECT_EQ(show_step(5), 5);
  EXPECT_EQ(insp->currentNote(), "the draft guessed the idiom");
}

SPECSCOPE_GUI_TEST_MAIN("presenter")
