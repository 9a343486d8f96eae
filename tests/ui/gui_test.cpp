// The desktop app end to end, under Xvfb with Mesa (QT_QPA_PLATFORM=xcb: the offscreen platform cannot render
// a QOpenGLWidget): start on the default model, chat (the text equals the engine's own greedy output), the
// inspector drew the tree's nodes, a three-method compare ends with its verdict, the race eagle2 | medusa |
// streaming runs on the shipped family with no configuration (streaming on its own target), its lanes are
// scrubbed together by the text cursor and open in the inspector, and it replays from the session library; a
// recorded session replays to the same final text. The app as a daily tool: long chats go on past the context,
// a full context is said, errors never block, replays agree on step numbers and can be closed mid-way, tokens
// open their steps, Help exists. Every view is saved as a PNG (docs/screenshots/ holds the committed ones).
#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QMenu>
#include <QHelpEvent>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QSignalSpy>
#include <QTest>
#include <QToolTip>
#include <filesystem>

#include "engine/methods/speculative_generator.h"
#include "engine/model/default_model.h"
#include "engine/model/model.h"
#include "ui/views/token_text_view.h"
#include "ui/engine/replay_controller.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/main/gl_setup.h"
#include "ui/main/main_window.h"
#include "ui/views/chat_view.h"
#include "ui/views/compare_view.h"
#include "ui/views/lane_editor.h"
#include "ui/views/race_cursor.h"
#include "ui/views/race_lane.h"
#include "ui/views/session_library_view.h"
#include "ui/views/settings_view.h"
#include "ui/views/statistics_view.h"
#include "sessions/html/html_export.h"
#include "sessions/reader.h"
#include "tests/test_support.h"

using namespace specscope;
using namespace specscope::ui;

namespace {

const char* kPrompt = "What does the word harbor mean?";
constexpr int kMaxTokens = 48;
constexpr int kRaceTokens = 24;

QString shots_dir() {
  QString d = qEnvironmentVariable("SPECSCOPE_SCREENSHOTS", QDir::tempPath() + "/specscope-screenshots");
  QDir().mkpath(d);
  return d;
}

QString db_path() {
  static const QString p = QDir::tempPath() + QString("/specscope-gui-test-%1/sessions.db").arg(QCoreApplication::applicationPid());
  return p;
}

// The engine's own chat answer for the prompt (greedy sps), computed in-process: the oracle for the chat view.
std::string expected_answer() {
  auto model = Model::load(default_model_path());
  auto ctx = model->new_cpu_context(0);
  auto method = make_method(MethodSpec{"vanilla", "", "", {}}, *model);
  GenerateOptions o;
  o.max_tokens = kMaxTokens;
  return generate_speculative(*model, *ctx, *method, encode_prompt(*model, kPrompt, true), o).gen.text;
}

void configure(MainWindow& w, const std::string& method) {
  AppSettings a = SettingsView::defaults();
  a.method = QString::fromStdString(method);
  a.max_tokens = kMaxTokens;
  a.session_db = db_path();
  a.record = true;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
}

void settle(int ms = 300) {
  QTest::qWait(ms);
  QApplication::processEvents();
}

}  // namespace

TEST(Gui, ChatStreamsTheModelsTextAndTheInspectorDrawsTheTree) {
  MainWindow w;
  configure(w, "sps");
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QSignalSpy done(&w, &MainWindow::jobDone);
  w.chat()->setInput(kPrompt);
  w.chat()->send();
  ASSERT_TRUE(done.wait(180000)) << "the chat run did not finish";
  settle();
  const std::string want = expected_answer();
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(w.chat()->lastAnswer().toStdString(), want);
  EXPECT_TRUE(w.chat()->transcriptText().contains(QString::fromStdString(want)));
  // The inspector drew the last step's tree (sps drafts 4 nodes a step) and has one timeline bar per step.
  w.inspector()->update();
  settle();
  EXPECT_GT(w.inspector()->stepCount(), 3);
  EXPECT_GT(w.inspector()->nodesDrawnLastFrame(), 0);
  EXPECT_GT(w.inspector()->framesDrawn(), 0);
  EXPECT_GT(done.takeFirst().at(0).toLongLong(), 0) << "the run was recorded";
  EXPECT_TRUE(w.grab().save(shots_dir() + "/chat.png"));
  EXPECT_TRUE(w.inspector()->exportPng(shots_dir() + "/inspector.png"));
  EXPECT_TRUE(w.inspector()->exportSvg(shots_dir() + "/inspector.svg"));
  w.showTab("statistics");
  settle();
  EXPECT_TRUE(w.grab().save(shots_dir() + "/statistics.png"));
}

TEST(Gui, CompareThreeMethodsEndsWithTheVerdict) {
  MainWindow w;
  configure(w, "sps");
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  w.showTab("compare");
  w.compare()->setPrompt(kPrompt);
  w.compare()->setLaneMethods({"vanilla", "sps", "pld"});
  w.compare()->setInterleaved(true);
  QSignalSpy done(&w, &MainWindow::jobDone);
  w.runCompare();
  ASSERT_TRUE(done.wait(300000)) << "the comparison did not finish";
  settle();
  EXPECT_TRUE(w.compare()->verdict().contains("identical")) << w.compare()->verdict().toStdString();
  EXPECT_EQ(w.compare()->laneText(1), w.compare()->laneText(0));
  EXPECT_EQ(w.compare()->laneText(2), w.compare()->laneText(0));
  EXPECT_GT(w.compare()->laneNodesDrawn(1), 0) << "the sps lane's miniature tree was drawn";
  EXPECT_TRUE(w.compare()->markdownTable().contains("| sps |"));
  // The vanilla lane was its target's reference (no second vanilla run), and is named as such.
  EXPECT_TRUE(w.compare()->referenceLine().contains("vanilla on base")) << w.compare()->referenceLine().toStdString();
  EXPECT_TRUE(w.grab().save(shots_dir() + "/compare.png"));
}

namespace {

// The lanes' shown steps all hold the cursor's token: the miniature, the text mark, and the inspector.
void expect_lanes_at_token(MainWindow& w, int token) {
  w.compare()->cursor()->setToken(token);
  settle(50);
  const auto& store = w.traces();
  for (int l = 0; l < store.lanes(); ++l) {
    const int want = store.step_at_token(l, token);
    ASSERT_GE(want, 0) << "lane " << l << " token " << token;
    EXPECT_EQ(w.compare()->laneShownStep(l), want) << "lane " << l << " token " << token;
    EXPECT_EQ(w.compare()->laneHighlightedStep(l), want) << "lane " << l << " token " << token;
  }
  if (w.compare()->inspectedLane() >= 0)
    EXPECT_EQ(w.compare()->laneInspector()->currentStep(), store.step_at_token(w.compare()->inspectedLane(), token));
}

// What a race shows once it is over, live or replayed.
void expect_race_verdict(MainWindow& w) {
  EXPECT_TRUE(w.compare()->verdict().contains("identical")) << w.compare()->verdict().toStdString();
  const auto& store = w.traces();
  ASSERT_EQ(store.lanes(), 3);
  EXPECT_EQ(store.lane(0).label, "eagle2");
  EXPECT_EQ(store.lane(1).label, "medusa");
  EXPECT_EQ(store.lane(2).label, "streaming");
  // Medusa-2 and streaming verify with their own targets (the base fine-tuned with their drafters), found through
  // the family manifest; eagle2 with the base.
  EXPECT_EQ(std::filesystem::path(store.lane(0).target).filename(), "base");
  EXPECT_EQ(std::filesystem::path(store.lane(1).target).filename(), "medusa2");
  EXPECT_EQ(std::filesystem::path(store.lane(2).target).filename(), "streaming");
  EXPECT_TRUE(w.compare()->laneTitle(1).contains("on medusa2")) << w.compare()->laneTitle(1).toStdString();
  EXPECT_TRUE(w.compare()->laneTitle(2).contains("on streaming")) << w.compare()->laneTitle(2).toStdString();
  // One reference per target; every lane's speedup is against its own.
  const QString refs = w.compare()->referenceLine();
  for (const char* target : {"base", "medusa2", "streaming"})
    EXPECT_TRUE(refs.contains(QString("vanilla on ") + target)) << target << ": " << refs.toStdString();
  const char* own[] = {"base", "medusa2", "streaming"};
  for (int l = 0; l < 3; ++l) {
    const std::string line = w.compare()->laneStatLine(l).toStdString();
    EXPECT_NE(line.find(std::string("vs vanilla on ") + own[l]), std::string::npos) << line;
    EXPECT_NE(line.find("same text"), std::string::npos) << line;
  }
  EXPECT_GT(store.lane(2).tokens(), 0);
}

}  // namespace

TEST(Gui, RaceEagle2MedusaStreamingOnTheShippedFamily) {
  MainWindow w;
  configure(w, "sps");
  AppSettings a = w.settingsView()->settings();
  a.max_tokens = kRaceTokens;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  ASSERT_EQ(a.sampling.temperature, 0.0f) << "greedy";
  w.resize(1600, 960);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  w.showTab("compare");
  w.compare()->setPrompt(kPrompt);
  w.compare()->setLaneMethods({"eagle2", "medusa", "streaming"});  // nothing else: the manifest fills the rest
  w.compare()->setInterleaved(true);
  QSignalSpy done(&w, &MainWindow::jobDone);
  w.runCompare();
  ASSERT_TRUE(done.wait(300000)) << "the race did not finish";
  settle();
  const qint64 session = done.takeFirst().at(0).toLongLong();
  EXPECT_GT(session, 0) << "the race was recorded";
  expect_race_verdict(w);
  for (int l = 0; l < 3; ++l) EXPECT_GT(w.compare()->laneNodesDrawn(l), 0) << "lane " << l << "'s miniature";

  // Hovering lane 3's miniature describes its step; a click opens it in the inspector.
  TreeInspectorWidget* mini = w.compare()->laneMiniature(2);
  const QPoint centre = mini->rect().center();
  QHelpEvent help(QEvent::ToolTip, centre, mini->mapToGlobal(centre));
  QApplication::sendEvent(mini, &help);
  EXPECT_TRUE(QToolTip::text().contains("streaming · step")) << QToolTip::text().toStdString();
  QToolTip::hideText();
  QTest::mouseClick(mini, Qt::LeftButton, {}, centre);
  settle();
  ASSERT_EQ(w.compare()->inspectedLane(), 2);
  EXPECT_EQ(w.compare()->laneInspector()->stepCount(), int(w.traces().lane(2).steps.size()));
  EXPECT_EQ(w.compare()->laneInspector()->currentStep(), w.compare()->laneShownStep(2));
  w.compare()->laneInspector()->repaint();
  settle();
  EXPECT_GT(w.compare()->laneInspector()->nodesDrawnLastFrame(), 0) << "the streaming tree in the inspector";

  // One cursor over the text moves every lane (and the inspector) to the step that made that token.
  const int tokens = w.compare()->cursor()->tokenCount();
  ASSERT_GE(tokens, kRaceTokens / 2);
  for (int token : {0, 1, tokens / 3, tokens / 2, tokens - 1}) expect_lanes_at_token(w, token);
  expect_lanes_at_token(w, tokens / 2);  // the screenshot: mid-text, the inspector on streaming
  w.compare()->laneInspector()->repaint();
  settle();
  EXPECT_TRUE(w.grab().save(shots_dir() + "/race-eagle2-medusa-streaming.png"));
  w.showTab("statistics");  // the lanes overlaid, one series per lane label
  settle();
  EXPECT_TRUE(w.grab().save(shots_dir() + "/race-statistics.png"));
  w.showTab("compare");

  // Four lanes fit a 1600-px screen: equal widths, stat lines wrapped to their width (not clipped).
  w.compare()->setLaneMethods({"eagle2", "medusa", "streaming", "pld"});
  for (auto* editor : w.compare()->findChildren<LaneEditor*>()) editor->setDetailsVisible(true);
  settle();
  EXPECT_TRUE(w.grab().save(shots_dir() + "/race-four-lanes.png"));
  const auto lanes = w.compare()->findChildren<RaceLane*>();
  std::vector<int> widths;
  for (auto* lane : lanes)
    if (lane->isVisible()) widths.push_back(lane->width());
  ASSERT_EQ(widths.size(), 4u);
  for (int wd : widths) EXPECT_NEAR(wd, widths[0], 2) << "lanes share the width equally";
  EXPECT_LE(w.compare()->minimumSizeHint().width(), 1600 - 40);
  for (auto* stats : w.compare()->findChildren<QLabel*>("laneStats"))
    if (stats->isVisible()) EXPECT_GE(stats->height(), stats->heightForWidth(stats->width())) << stats->text().toStdString();

  // The race replays from the session library with the same lanes, and the cursor and inspector still work.
  w.openSession(session);
  ASSERT_TRUE(w.replay()->isOpen());
  w.replay()->setSpeed(0);
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.replay()->position() == w.replay()->length(); }, 60000));
  settle();
  expect_race_verdict(w);
  const auto requests = w.compare()->laneRequests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[2].method, "streaming");
  QTest::mouseClick(w.compare()->laneMiniature(2), Qt::LeftButton, {}, centre);
  settle();
  EXPECT_EQ(w.compare()->inspectedLane(), 2);
  expect_lanes_at_token(w, tokens / 3);
  EXPECT_TRUE(w.grab().save(shots_dir() + "/race-replay.png"));
}

TEST(Gui, TheInspectorFollowsARaceLaneLiveAndTheRaceStops) {
  MainWindow w;
  configure(w, "sps");
  AppSettings a = w.settingsView()->settings();
  a.max_tokens = 160;
  a.record = false;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  w.showTab("compare");
  w.compare()->setPrompt(kPrompt);
  w.compare()->setLaneMethods({"pld", "eagle2"});
  w.compare()->setInterleaved(true);
  QSignalSpy done(&w, &MainWindow::jobDone);
  w.runCompare();
  const auto& store = w.traces();
  ASSERT_TRUE(QTest::qWaitFor([&] { return store.lanes() == 2 && store.lane(1).steps.size() >= 2; }, 120000));
  w.compare()->inspectLane(1, -1);  // "Follow live" on lane 2
  EXPECT_EQ(w.compare()->inspectedLane(), 1);
  EXPECT_TRUE(w.compare()->laneInspector()->followsLive());
  const size_t seen = store.lane(1).steps.size();
  // A few more steps, or the end of a race that was quicker than that (both leave the inspector checkable).
  (void)QTest::qWaitFor([&] { return store.lane(1).steps.size() >= seen + 4 || !w.busy(); }, 60000);
  const bool was_running = w.busy();
  std::printf("stopping a race that %s\n", was_running ? "was running" : "had ended");
  w.stop();
  if (was_running) ASSERT_TRUE(done.wait(60000));
  settle();
  // Whatever had arrived is in the inspector, on the newest step.
  EXPECT_EQ(w.compare()->laneInspector()->stepCount(), int(store.lane(1).steps.size()));
  EXPECT_EQ(w.compare()->laneInspector()->currentStep(), int(store.lane(1).steps.size()) - 1);
  if (was_running) EXPECT_EQ(w.compare()->verdict(), "stopped");
}

TEST(Gui, RecordedSessionReplaysToTheSameText) {
  // A fresh window on the store the first test wrote: replay needs no model.
  MainWindow w;
  configure(w, "sps");
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  w.showTab("sessions");
  w.library()->refresh();
  settle();
  ASSERT_GE(w.library()->rowCount(), 2) << "the chat and the comparison were recorded";
  EXPECT_TRUE(w.grab().save(shots_dir() + "/sessions.png"));
  const std::string want = expected_answer();
  w.openSession(1);  // the chat of the first test
  ASSERT_TRUE(w.replay()->isOpen());
  w.replay()->setSpeed(0);
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.replay()->position() == w.replay()->length(); }, 60000));
  settle();
  EXPECT_EQ(w.chat()->lastAnswer().toStdString(), want);
  EXPECT_GT(w.inspector()->nodesDrawnLastFrame(), 0);
  EXPECT_TRUE(w.grab().save(shots_dir() + "/replay.png"));
  // The app records what the CLI records: the CLI replays the app's chat and its footer.
  auto cli = specscope::test::run_cli("sessions replay 1 --speed 0 --session-db " + db_path().toStdString());
  EXPECT_EQ(cli.exit_code, 0) << cli.out;
  EXPECT_NE(cli.out.find(want), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("[sps | 48 tokens"), std::string::npos) << cli.out;
  w.showTab("settings");
  settle();
  EXPECT_TRUE(w.grab().save(shots_dir() + "/settings.png"));
}

// File > Export as web page: the replayed session as the same self-contained page the CLI writes; an unwritable
// path is an error in the status bar, never a dialog. Its own store, recorded by the CLI, so the test stands alone.
TEST(Gui, FileExportAsWebPageWritesTheOpenSession) {
  const QString dir = QDir::tempPath() + QString("/specscope-gui-html-%1").arg(QCoreApplication::applicationPid());
  QDir(dir).removeRecursively();
  QDir().mkpath(dir);
  const QString db = dir + "/s.db";
  auto rec = specscope::test::run_cli("run --chat --method sps --prompt 'Name three colours.' --max-tokens 24 "
                                      "--session-db " + db.toStdString());
  ASSERT_EQ(rec.exit_code, 0) << rec.out;
  MainWindow w;
  AppSettings a = SettingsView::defaults();
  a.session_db = db;
  a.record = false;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QAction* item = nullptr;
  for (QAction* menu : w.menuBar()->actions())
    if (menu->menu() && menu->text().contains("File"))
      for (QAction* a2 : menu->menu()->actions())
        if (a2->text() == QString::fromUtf8("Export as web page\xE2\x80\xA6")) item = a2;
  ASSERT_NE(item, nullptr) << "File > Export as web page…";
  w.openSession(1);
  ASSERT_TRUE(w.replay()->isOpen());
  const QString out = dir + "/session.html";
  EXPECT_EQ(w.exportWebPage(out).toStdString(), "");
  EXPECT_TRUE(w.statusText().contains("exported")) << w.statusText().toStdString();
  sessions::SessionReader reader(db.toStdString());
  QFile page(out);
  ASSERT_TRUE(page.open(QIODevice::ReadOnly));
  EXPECT_EQ(page.readAll().toStdString(), sessions::session_html(reader, 1)) << "the CLI's page";
  const QString bad = dir + "/no/such/dir/x.html";
  EXPECT_NE(w.exportWebPage(bad).toStdString(), "");
  EXPECT_TRUE(w.statusText().contains(bad)) << w.statusText().toStdString();
  EXPECT_FALSE(QFile::exists(bad));
}

TEST(Gui, Eagle2OnTheShippedHeadDrawsItsDynamicTree) {
  MainWindow w;
  configure(w, "eagle2");
  {  // the paper's tree (on CPU the default is a tree sized for this machine, often a handful of nodes)
    AppSettings a = w.settingsView()->settings();
    a.method_options["eagle2"]["tree"] = "published";
    w.settingsView()->setSettings(a);
    emit w.settingsView()->changed();
  }
  ASSERT_FALSE(w.settingsView()->settings().eagle_head.isEmpty()) << "the default family ships an EAGLE head";
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QSignalSpy done(&w, &MainWindow::jobDone);
  w.chat()->setInput(kPrompt);
  w.chat()->send();
  ASSERT_TRUE(done.wait(180000));
  settle();
  EXPECT_EQ(w.chat()->lastAnswer().toStdString(), expected_answer()) << "lossless";
  w.inspector()->setCurrentStep(1);  // an early step: a full 59-node tree
  w.inspector()->repaint();
  settle();
  EXPECT_GT(w.inspector()->nodesDrawnLastFrame(), 20) << "EAGLE-2's dynamic tree (up to 59 drafts) was drawn";
  EXPECT_TRUE(w.grab().save(shots_dir() + "/chat_eagle2.png"));
}

// On the CPU the app sizes a method's tree for this machine by default (tree=auto) and says what the cost model
// expected beside what the answer measured.
TEST(Gui, TreeSizedForThisMachineShowsExpectedBesideMeasured) {
  MainWindow w;
  configure(w, "pld");
  {
    AppSettings a = w.settingsView()->settings();
    a.backend = "cpu";
    w.settingsView()->setSettings(a);
    emit w.settingsView()->changed();
  }
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QSignalSpy done(&w, &MainWindow::jobDone);
  w.chat()->setInput(kPrompt);
  w.chat()->send();
  ASSERT_TRUE(done.wait(180000));
  settle();
  EXPECT_EQ(w.chat()->lastAnswer().toStdString(), expected_answer()) << "lossless";
  const QString status = w.statusText();
  EXPECT_TRUE(status.contains(" (expected ") && status.contains("× vanilla")) << status.toStdString();
  EXPECT_TRUE(status.contains("num-draft=")) << status.toStdString();
}

// ---- the app as a daily tool (issue 18) -----------------------------------------------------------------------

namespace {

// One chat turn, to its end; false when it did not end in time.
bool chat_turn(MainWindow& w, const QString& text) {
  QSignalSpy done(&w, &MainWindow::jobDone);
  w.chat()->setInput(text);
  w.chat()->send();
  return done.wait(120000);
}

QString filler(int words) { return QString("harbor ").repeated(words); }

void set_max_tokens(MainWindow& w, int n, bool record) {
  AppSettings a = w.settingsView()->settings();
  a.max_tokens = n;
  a.record = record;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
}

QPushButton* button(MainWindow& w, const QString& text) {
  for (auto* b : w.chat()->findChildren<QPushButton*>())
    if (b->text() == text) return b;
  return nullptr;
}

}  // namespace

TEST(Gui, ALongChatDropsItsOldestTurnsWithAMarkerAndGoesOn) {
  // Before: the third turn failed with "the prompt has 516 tokens, more than fits the context of 512 tokens"
  // in a modal, and the transcript said "Model: [stopped]".
  MainWindow w;
  configure(w, "vanilla");
  set_max_tokens(w, 64, false);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  for (int turn = 1; turn <= 4; ++turn) {
    ASSERT_TRUE(chat_turn(w, filler(70) + QString("Turn %1: what does the word harbor mean?").arg(turn)));
    settle(50);
    ASSERT_EQ(w.chat()->conversation().size(), size_t(2 * turn)) << "turn " << turn << " answered";
    EXPECT_FALSE(w.statusText().startsWith("Error")) << w.statusText().toStdString();
    EXPECT_FALSE(w.chat()->busy());
  }
  const QString marker = w.chat()->cutMarkerText();
  EXPECT_TRUE(marker.contains("left out to fit the context of 512 tokens")) << marker.toStdString();
  // One marker, where history was cut: after the first turn(s), before the newest ones.
  const QString text = w.chat()->transcriptText();
  EXPECT_EQ(text.count("left out to fit the context"), 1);
  const qsizetype at = text.indexOf("left out to fit the context");
  EXPECT_GT(at, text.indexOf("Turn 1:"));
  EXPECT_LT(at, text.indexOf("Turn 4:"));
  EXPECT_FALSE(text.contains("[stopped]"));
  EXPECT_FALSE(text.contains("error"));
  EXPECT_TRUE(w.grab().save(shots_dir() + "/chat-context-cut.png"));
}

TEST(Gui, AnAnswerThatFillsTheContextSaysSoAndMaxTokensBeyondItIsNotedUpFront) {
  MainWindow w;
  configure(w, "vanilla");
  set_max_tokens(w, 200, false);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QStringList statuses;  // every message the status bar showed during the run
  QTimer watch;
  QObject::connect(&watch, &QTimer::timeout, [&] {
    if (statuses.isEmpty() || statuses.back() != w.statusText()) statuses << w.statusText();
  });
  watch.start(5);
  // A long question leaves 40-odd tokens of the 512 for an answer the model makes longer than that.
  ASSERT_TRUE(chat_turn(w, filler(230) + "What does the word harbor mean?"));
  settle(50);
  watch.stop();
  EXPECT_TRUE(statuses.join('\n').contains("Note: max tokens 200 is more than the context leaves")) << statuses.join('\n').toStdString();
  EXPECT_TRUE(w.statusText().contains("context full")) << w.statusText().toStdString();
  EXPECT_TRUE(w.chat()->transcriptText().endsWith("[context full]")) << w.chat()->transcriptText().right(80).toStdString();
  EXPECT_FALSE(w.chat()->transcriptText().contains("[stopped]"));
  EXPECT_FALSE(w.chat()->busy());
}

TEST(Gui, ErrorsGoToTheTranscriptAndStatusBarNeverADialogAndTheNextJobClearsThem) {
  // Before: the app put errors up in a modal box (unless SPECSCOPE_NO_DIALOGS was set; no such switch is left).
  MainWindow w;
  configure(w, "vanilla");
  set_max_tokens(w, 16, false);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  int modals = 0;
  QTimer watch;
  QObject::connect(&watch, &QTimer::timeout, [&] {
    if (QWidget* m = QApplication::activeModalWidget()) {
      ++modals;
      m->close();
    }
  });
  watch.start(20);
  // Changing the target loads it at once: progress, then its description (or the error) in the status bar.
  AppSettings a = w.settingsView()->settings();
  const QString good = a.model_path;
  a.model_path = QDir::tempPath() + "/specscope-no-such-model";
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.statusText().startsWith("Error"); }, 30000)) << w.statusText().toStdString();
  EXPECT_TRUE(w.statusText().contains("specscope-no-such-model")) << w.statusText().toStdString();
  // A turn on it fails: the error is in the transcript (not "[stopped]"), and the chat is usable.
  ASSERT_TRUE(chat_turn(w, "What does the word harbor mean?"));
  settle(50);
  EXPECT_TRUE(w.chat()->transcriptText().contains("[error:")) << w.chat()->transcriptText().toStdString();
  EXPECT_FALSE(w.chat()->transcriptText().contains("[stopped]"));
  EXPECT_FALSE(w.chat()->busy());
  EXPECT_TRUE(button(w, "Regenerate")->isEnabled());
  EXPECT_TRUE(button(w, "Send")->isEnabled());
  // Back to the real model: the load shows in the status bar right away, and the next turn starts clean.
  a.model_path = good;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.statusText().startsWith("Loaded"); }, 30000)) << w.statusText().toStdString();
  EXPECT_TRUE(w.modelText().contains("layers")) << w.modelText().toStdString();
  QSignalSpy done(&w, &MainWindow::jobDone);
  button(w, "Regenerate")->click();  // the failed question, asked again
  EXPECT_FALSE(w.statusText().contains("Error")) << "a stale error is cleared when a job starts";
  ASSERT_TRUE(done.wait(60000));
  settle(50);
  EXPECT_EQ(w.chat()->conversation().size(), 2u) << "question and its answer";
  EXPECT_EQ(modals, 0) << "no blocking dialog";
}

TEST(Gui, ReplayStepsAgreeClosingItMidwayFreesTheChatAndTokensOpenTheirSteps) {
  MainWindow w;
  configure(w, "sps");
  set_max_tokens(w, kMaxTokens, true);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_TRUE(chat_turn(w, kPrompt));
  settle();
  const qint64 session = w.lastSessionId();
  ASSERT_GT(session, 0);

  // A token clicked in the answer opens its step; the chat's tooltip, the inspector's header and the timeline
  // all use the StepRecord's own number (0: the prefill).
  auto* transcript = w.chat()->findChild<TokenTextView*>("chatTranscript");
  ASSERT_NE(transcript, nullptr);
  const int steps = w.inspector()->stepCount();
  ASSERT_GT(steps, 4);
  const int want = steps / 2;
  int pos = -1;
  for (int p = 0; p < transcript->document()->characterCount() && pos < 0; ++p)
    if (transcript->stepAt(p) == want && transcript->stepAt(p + 1) == want) pos = p;
  ASSERT_GE(pos, 0);
  QTextCursor c(transcript->document());
  c.setPosition(pos);
  transcript->setTextCursor(c);
  transcript->ensureCursorVisible();
  const QRect r = transcript->cursorRect(c);
  QTest::mouseClick(transcript->viewport(), Qt::LeftButton, {}, QPoint(r.left() + 2, r.center().y()));
  settle(100);
  EXPECT_EQ(w.inspector()->currentStep(), want);
  const int number = w.traces().lane(0).steps.at(size_t(want)).step;
  EXPECT_TRUE(w.inspector()->headerTitle().startsWith(QString("Step %1 / ").arg(number))) << w.inspector()->headerTitle().toStdString();
  c.setPosition(pos + 1);
  EXPECT_TRUE(c.charFormat().toolTip().startsWith(QString("step %1 ").arg(number))) << c.charFormat().toolTip().toStdString();

  // Replay: the header and the replay bar count the same steps, and nothing says "live".
  w.openSession(session);
  ASSERT_TRUE(w.replay()->isOpen());
  w.replay()->pause();
  const int len = w.replay()->length();
  w.replay()->seek(len / 2);
  settle(100);
  ASSERT_TRUE(w.chat()->busy()) << "the replayed answer is still being shown";
  const int last = w.replay()->lanes()[0].steps.back().step;
  const int shown = w.replay()->lanes()[0].steps.at(size_t(len / 2 - 1)).step;
  EXPECT_EQ(w.inspector()->headerTitle(), QString("Step %1 / %2").arg(shown).arg(last));
  QString bar;
  for (auto* l : w.findChildren<QLabel*>())
    if (l->text().startsWith("Replaying session")) bar = l->text();
  EXPECT_TRUE(bar.endsWith(QString("step %1 / %2").arg(shown).arg(last))) << bar.toStdString();
  EXPECT_FALSE(w.inspector()->liveShown());

  // Closing it mid-way: before, Send, Regenerate, Edit last and New chat stayed disabled for good.
  QPushButton* close = nullptr;
  for (auto* b : w.findChildren<QPushButton*>())
    if (b->text() == "Close replay") close = b;
  ASSERT_NE(close, nullptr);
  close->click();
  settle(50);
  EXPECT_FALSE(w.chat()->busy());
  for (const char* name : {"Send", "Regenerate", "Edit last", "New chat"}) EXPECT_TRUE(button(w, name)->isEnabled()) << name;
  EXPECT_FALSE(button(w, "Stop")->isEnabled());
  button(w, "New chat")->click();
  EXPECT_TRUE(w.chat()->conversation().empty());
}

TEST(Gui, SessionsShowNewestFirstWithADownwardArrowAndHelpHasAboutAndShortcuts) {
  MainWindow w;
  configure(w, "sps");
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  auto* table = w.library()->findChild<QTableView*>();
  ASSERT_NE(table, nullptr);
  EXPECT_TRUE(table->model()->headerData(0, Qt::Horizontal).toString().endsWith(QChar(0x25BC)))
      << "rows are newest first: ID descending, ▼";
  table->sortByColumn(0, Qt::AscendingOrder);
  EXPECT_TRUE(table->model()->headerData(0, Qt::Horizontal).toString().endsWith(QChar(0x25B2)));
  table->sortByColumn(0, Qt::DescendingOrder);

  QAction *about = nullptr, *keys = nullptr;
  for (QAction* top : w.menuBar()->actions())
    if (top->menu())
      for (QAction* a : top->menu()->actions()) {
        if (a->text() == "About SpecScope") about = a;
        if (a->text() == "Keyboard shortcuts") keys = a;
      }
  ASSERT_NE(about, nullptr);
  ASSERT_NE(keys, nullptr);
  about->trigger();
  settle(50);
  auto* box = w.findChild<QMessageBox*>("aboutBox");
  ASSERT_NE(box, nullptr);
  EXPECT_FALSE(box->isModal());
  EXPECT_TRUE(box->text().contains(SPECSCOPE_VERSION)) << box->text().toStdString();
  EXPECT_TRUE(box->text().contains(db_path())) << "the session store path";
  EXPECT_TRUE(box->text().contains("Backend:"));
  EXPECT_FALSE(box->text().contains("http")) << "no external links";
  box->close();
  keys->trigger();
  settle(50);
  auto* shortcuts = w.findChild<QMessageBox*>("shortcutsBox");
  ASSERT_NE(shortcuts, nullptr);
  EXPECT_TRUE(shortcuts->text().contains(QKeySequence(QKeySequence::New).toString(QKeySequence::NativeText) + "\tFile › New chat"))
      << shortcuts->text().toStdString();
  EXPECT_TRUE(shortcuts->text().contains("Esc\tRun › Stop")) << shortcuts->text().toStdString();
  shortcuts->close();
}

// A reasoning model in the live chat (the tiny Qwen3 fixture with DeepSeek-R1's template: the prompt opens the think
// block and the fixture never closes it): the runner says the reply's shape before its first step, the transcript
// shows the thinking after its note, the conversation keeps it as the answer's reasoning (not its content) for the
// next turn, and the status line and the statistics tab give speculation's figures while thinking and while answering.
TEST(Gui, AReasoningModelsThinkingIsShownApartLive) {
  const std::filesystem::path model = std::filesystem::path(QDir::tempPath().toStdString()) / "specscope-gui-reasoning";
  std::filesystem::remove_all(model);
  std::filesystem::copy(test::fixture("models/qwen3_f32"), model);
  std::filesystem::copy_file(test::fixture("chat_templates/published/deepseek-r1-distill.jinja"),
                             model / "chat_template.jinja");
  MainWindow w;
  AppSettings a = w.settingsView()->settings();
  a.model_path = QString::fromStdString(model.string());
  a.method = "vanilla";
  a.max_tokens = 12;
  a.record = false;
  a.backend = "cpu";
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_TRUE(chat_turn(w, "Hi"));
  settle(100);
  const QString transcript = w.chat()->transcriptText();
  EXPECT_TRUE(transcript.contains("Model: thinking: ")) << transcript.toStdString();
  ASSERT_EQ(w.chat()->conversation().size(), 2u);
  EXPECT_EQ(w.chat()->conversation().back().content, "");
  EXPECT_EQ(w.chat()->conversation().back().reasoning, w.chat()->lastAnswer().toStdString());
  EXPECT_FALSE(w.chat()->conversation().back().reasoning.empty());
  EXPECT_TRUE(w.statusText().contains("thinking τ")) << w.statusText().toStdString();
  // The statistics tab says the same beside the run's cost model.
  EXPECT_TRUE(w.statistics()->costModelText().contains("Thinking: τ 1.00 over 11 tokens (11 steps)"))
      << w.statistics()->costModelText().toStdString();
  std::filesystem::remove_all(model);
}

int main(int argc, char** argv) {
  // Keep the user's QSettings and session store out of the tests.
  const auto tmp = std::filesystem::temp_directory_path() / ("specscope-gui-home-" + std::to_string(getpid()));
  std::filesystem::create_directories(tmp);
  qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString((tmp / "config").string()));
  qputenv("XDG_DATA_HOME", QByteArray::fromStdString((tmp / "data").string()));
  std::filesystem::remove_all(std::filesystem::path(db_path().toStdString()).parent_path());
  specscope::ui::set_opengl_defaults();
  QApplication app(argc, argv);
  QApplication::setOrganizationName("SpecScopeTest");
  QApplication::setApplicationName("SpecScopeTest");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
