// The desktop app end to end, under Xvfb with Mesa (QT_QPA_PLATFORM=xcb: the offscreen platform cannot render
// a QOpenGLWidget): start on the default model, chat (the text equals the engine's own greedy output), the
// inspector drew the tree's nodes, a three-method compare ends with its verdict, a recorded session replays to
// the same final text. Every view is saved as a PNG (docs/screenshots/ holds the committed ones).
#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QSignalSpy>
#include <QTest>
#include <filesystem>

#include "engine/methods/speculative_generator.h"
#include "engine/model/default_model.h"
#include "engine/model/model.h"
#include "ui/engine/replay_controller.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/main/gl_setup.h"
#include "ui/main/main_window.h"
#include "ui/views/chat_view.h"
#include "ui/views/compare_view.h"
#include "ui/views/session_library_view.h"
#include "ui/views/settings_view.h"
#include "ui/views/statistics_view.h"
#include "tests/test_support.h"

using namespace specscope;
using namespace specscope::ui;

namespace {

const char* kPrompt = "What does the word harbor mean?";
constexpr int kMaxTokens = 48;

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
  EXPECT_TRUE(w.grab().save(shots_dir() + "/compare.png"));
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

TEST(Gui, Eagle2OnTheShippedHeadDrawsItsDynamicTree) {
  MainWindow w;
  configure(w, "eagle2");
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

int main(int argc, char** argv) {
  // Keep the user's QSettings and session store out of the tests.
  const auto tmp = std::filesystem::temp_directory_path() / ("specscope-gui-home-" + std::to_string(getpid()));
  std::filesystem::create_directories(tmp);
  qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString((tmp / "config").string()));
  qputenv("XDG_DATA_HOME", QByteArray::fromStdString((tmp / "data").string()));
  qputenv("SPECSCOPE_NO_DIALOGS", "1");
  std::filesystem::remove_all(std::filesystem::path(db_path().toStdString()).parent_path());
  specscope::ui::set_opengl_defaults();
  QApplication app(argc, argv);
  QApplication::setOrganizationName("SpecScopeTest");
  QApplication::setApplicationName("SpecScopeTest");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
