// The app's faults (issue 18 item 6), end to end under Xvfb: the session store's disk fills, or its file system
// turns read-only, during a chat (the chat goes on, the status bar says recording stopped and why, what was
// committed is all there); the store is deleted or replaced while the library is open (it says so, shows what is
// there now, never opens or deletes a stale row, and a chat never joins another store's session); a model folder
// disappears between choosing it and loading it (one line naming it, the loaded model stays, the app usable); Stop
// during a long prompt's prefill (it ends within a layer, the transcript says stopped, Send is back).
//
// The disk faults are real: a tmpfs of the test's own, filled to ENOSPC or remounted read-only between two turns
// (tests/private_tmpfs.h; root only, else those tests skip). The long prefill runs on a copy of the shipped base that
// reads 4,096 tokens.
#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>
#include <QTimer>
#include <filesystem>
#include <fstream>
#include <functional>

#include "engine/methods/step_record_json.h"
#include "engine/model/default_model.h"
#include "sessions/reader.h"
#include "sessions/writer.h"
#include "tests/private_tmpfs.h"
#include "ui/main/gl_setup.h"
#include "ui/main/main_window.h"
#include "ui/views/chat_view.h"
#include "ui/views/session_library_view.h"
#include "ui/views/settings_view.h"

using namespace specscope;
using namespace specscope::ui;
namespace fs = std::filesystem;

namespace {

const char* kPrompt = "What does the word harbor mean?";

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("specscope-gui-faults-" + std::to_string(getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void configure(MainWindow& w, const fs::path& db, bool record, const QString& model = {}, int max_tokens = 24) {
  AppSettings a = SettingsView::defaults();
  a.method = "vanilla";
  a.max_tokens = max_tokens;
  a.session_db = QString::fromStdString(db.string());
  a.record = record;
  if (!model.isEmpty()) a.model_path = model;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
}

void set_model(MainWindow& w, const QString& path) {
  AppSettings a = w.settingsView()->settings();
  a.model_path = path;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
}

void set_max_tokens(MainWindow& w, int n) {
  AppSettings a = w.settingsView()->settings();
  a.max_tokens = n;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
}

bool chat_turn(MainWindow& w, const QString& text) {
  QSignalSpy done(&w, &MainWindow::jobDone);
  w.chat()->setInput(text);
  w.chat()->send();
  return done.wait(180000);
}

QPushButton* button(QWidget* in, const QString& text) {
  for (auto* b : in->findChildren<QPushButton*>())
    if (b->text() == text) return b;
  return nullptr;
}

// Every message the status bar showed while `fn` ran (polled: messages replace each other within a job).
QStringList statuses_during(MainWindow& w, const std::function<void()>& fn) {
  QStringList seen{w.statusText()};
  QTimer watch;
  QObject::connect(&watch, &QTimer::timeout, [&] {
    if (seen.back() != w.statusText()) seen << w.statusText();
  });
  watch.start(2);
  fn();
  watch.stop();
  if (seen.back() != w.statusText()) seen << w.statusText();
  return seen;
}

bool loaded(MainWindow& w, const QString& model) {
  return QTest::qWaitFor([&] { return w.statusText() == "Loaded " + model; }, 60000);
}

// A store with one chat session per title (its prompt), as another machine or a backup would hold.
void make_store(const fs::path& db, const std::vector<std::string>& titles) {
  sessions::SessionWriter writer(db.string());
  for (const auto& title : titles) {
    sessions::SessionMeta meta;
    meta.kind = "chat";
    meta.title = title;
    const int64_t s = writer.begin_session(meta);
    sessions::RunMeta run;
    run.prompt = title;
    const int64_t r = writer.begin_run(s, run);
    StepRecord step;
    step.committed = {5};
    writer.append_step(r, step, "x");
  }
}

// The shipped base with a 4,096-token context (its config says 512; RoPE runs past it unscaled): the files linked, the
// config rewritten. Its answers to 3,500 tokens of filler do not matter; the prefill's length does.
QString long_context_model(const fs::path& dir) {
  const fs::path base = default_model_path();
  for (const auto& e : fs::directory_iterator(base))
    if (e.path().filename() != "config.json") fs::create_symlink(e.path(), dir / e.path().filename());
  std::ifstream in(base / "config.json");
  std::string config((std::istreambuf_iterator<char>(in)), {});
  const std::string key = "\"max_position_embeddings\": 512";
  const auto at = config.find(key);
  EXPECT_NE(at, std::string::npos) << "the base's config changed: " << config;
  if (at != std::string::npos) config.replace(at, key.size(), "\"max_position_embeddings\": 4096");
  std::ofstream(dir / "config.json") << config;
  return QString::fromStdString(dir.string());
}

QString long_prompt() { return QString("the harbor is a place where ships stay ").repeated(320).trimmed(); }  // ~3,500 tokens

// The committed steps of a recorded run equal the ones the chat showed.
void expect_recorded(const fs::path& db, int64_t session, const std::vector<StepRecord>& live) {
  sessions::SessionReader reader(db.string());
  const auto row = reader.session(session);
  ASSERT_EQ(row.runs.size(), 1u) << "the first answer only";
  const int64_t run = row.runs[0].id;
  ASSERT_EQ(reader.step_count(run), int64_t(live.size()));
  for (int64_t i = 0; i < int64_t(live.size()); ++i)
    EXPECT_EQ(to_json(reader.step(run, i).record), to_json(live[size_t(i)])) << "step " << i;
}

void expect_chat_usable(MainWindow& w) {
  EXPECT_FALSE(w.chat()->busy());
  EXPECT_TRUE(button(w.chat(), "Send")->isEnabled());
  EXPECT_TRUE(button(w.chat(), "Regenerate")->isEnabled());
  EXPECT_FALSE(button(w.chat(), "Stop")->isEnabled());
}

}  // namespace

TEST(GuiFaults, TheDiskFillsDuringAChatRecordingStopsTheChatGoesOnNothingCommittedIsLost) {
  test::PrivateTmpfs disk(scratch("disk-full") / "mnt", 2 << 20);
  if (!disk.ok()) GTEST_SKIP() << "no tmpfs of our own: " << disk.why_not();
  const fs::path db = disk.dir() / "sessions.db";
  MainWindow w;
  configure(w, db, true);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_TRUE(chat_turn(w, kPrompt));
  const qint64 session = w.lastSessionId();
  ASSERT_GT(session, 0);
  const std::vector<StepRecord> first = w.traces().lane(0).steps;
  ASSERT_GT(first.size(), 3u);

  disk.fill();
  const QStringList seen = statuses_during(w, [&] { ASSERT_TRUE(chat_turn(w, "And what does the word ship mean?")); });
  EXPECT_EQ(w.chat()->conversation().size(), 4u) << "the second question was answered";
  EXPECT_FALSE(w.chat()->transcriptText().contains("[error")) << w.chat()->transcriptText().toStdString();
  expect_chat_usable(w);
  // "the disk is full" (ENOSPC under an I/O error) or "the disk or the database is full" (SQLITE_FULL): which one
  // depends on which file SQLite was growing when the space ran out.
  const QString want = "Recording stopped: " + QString::fromStdString(db.string()) + ": the disk ";
  EXPECT_TRUE(w.statusText().startsWith(want) && w.statusText().contains("full"))
      << w.statusText().toStdString() << "\nseen:\n" << seen.join('\n').toStdString();
  // Everything the first answer committed is there, read while the disk is still full.
  expect_recorded(db, session, first);
  disk.free_space();
}

TEST(GuiFaults, TheStoreTurnsReadOnlyDuringAChatRecordingStopsTheChatGoesOnNothingCommittedIsLost) {
  test::PrivateTmpfs disk(scratch("read-only") / "mnt", 8 << 20);
  if (!disk.ok()) GTEST_SKIP() << "no tmpfs of our own: " << disk.why_not();
  const fs::path db = disk.dir() / "sessions.db";
  MainWindow w;
  configure(w, db, true);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_TRUE(chat_turn(w, kPrompt));
  const qint64 session = w.lastSessionId();
  ASSERT_GT(session, 0);
  const std::vector<StepRecord> first = w.traces().lane(0).steps;

  // Between two answers no file on it is open for writing, so Linux lets it go read-only.
  const std::string why = disk.remount(true);
  ASSERT_TRUE(why.empty()) << why;
  ASSERT_TRUE(chat_turn(w, "And what does the word ship mean?"));
  EXPECT_EQ(w.chat()->conversation().size(), 4u);
  EXPECT_FALSE(w.chat()->transcriptText().contains("[error"));
  expect_chat_usable(w);
  EXPECT_EQ(w.statusText(), "Recording stopped: " + QString::fromStdString(db.string()) + ": the file system is read-only");
  // The library still lists what is there, from the read-only file system.
  w.showTab("sessions");
  QApplication::processEvents();
  EXPECT_EQ(w.library()->rowCount(), 1);
  expect_recorded(db, session, first);
  EXPECT_TRUE(disk.remount(false).empty());
}

TEST(GuiFaults, TheLibraryNoticesItsStoreDeletedOrReplacedAndAChatNeverJoinsAnotherStoresSession) {
  const fs::path dir = scratch("library");
  const fs::path db = dir / "sessions.db";
  make_store(db, {"alpha one", "alpha two"});
  MainWindow w;
  configure(w, db, true);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  w.showTab("sessions");
  auto* table = w.library()->findChild<QTableView*>();
  ASSERT_NE(table, nullptr);
  ASSERT_EQ(w.library()->rowCount(), 2);
  table->selectRow(0);
  auto library_line = [&] {
    QStringList all;
    for (auto* l : w.library()->findChildren<QLabel*>()) all << l->text();
    return all.join('\n');
  };

  // Replaced by another store renamed over it: Open does not open "session 2" of the other file.
  make_store(dir / "other.db", {"beta"});
  fs::rename(dir / "other.db", db);
  QSignalSpy opened(w.library(), &SessionLibraryView::openSession);
  button(w.library(), "Open")->click();
  EXPECT_EQ(opened.count(), 0) << "a stale row was opened";
  EXPECT_EQ(w.library()->rowCount(), 1) << "the new store's sessions";
  EXPECT_TRUE(library_line().contains("was replaced by another file: 1 session in it")) << library_line().toStdString();
  EXPECT_TRUE(w.statusText().contains("was replaced by another file")) << w.statusText().toStdString();

  // Deleted while another tab was shown: coming back says so, and shows no rows.
  w.showTab("chat");
  fs::remove(db);
  w.showTab("sessions");
  QApplication::processEvents();
  EXPECT_EQ(w.library()->rowCount(), 0);
  EXPECT_TRUE(library_line().contains(QString::fromStdString(db.string()) + " was deleted")) << library_line().toStdString();

  // The next recorded answer makes a new store, which the library then shows.
  w.showTab("chat");
  ASSERT_TRUE(chat_turn(w, kPrompt));
  const qint64 session = w.lastSessionId();
  EXPECT_EQ(session, 1);
  EXPECT_EQ(w.library()->rowCount(), 1);

  // Replaced again, by a store whose session 1 is another conversation: the chat's next answer goes to a session
  // of its own, never into that one.
  make_store(dir / "third.db", {"gamma"});
  fs::rename(dir / "third.db", db);
  ASSERT_TRUE(chat_turn(w, "And what does the word ship mean?"));
  EXPECT_EQ(w.statusText(), QString::fromStdString(db.string()) +
                                " is not the store this chat was recorded in: its answers now go to a new session");
  sessions::SessionReader reader(db.string());
  EXPECT_EQ(reader.session(1).runs.size(), 1u) << "gamma's session kept only its own run";
  EXPECT_EQ(reader.session(1).meta.title, "gamma");
  EXPECT_EQ(w.lastSessionId(), 2);
  EXPECT_EQ(reader.session(2).runs.size(), 1u);
}

TEST(GuiFaults, AModelFolderThatVanishesBeforeItLoadsLeavesTheLoadedModelAndTheAppUsable) {
  const fs::path dir = scratch("vanishing-model");
  fs::create_directories(dir / "long");
  const QString long_model = long_context_model(dir / "long");
  const fs::path vanishing = dir / "vanishing";
  fs::create_directories(vanishing);
  for (const auto& e : fs::directory_iterator(default_model_path())) fs::create_symlink(e.path(), vanishing / e.path().filename());
  const QString gone = QString::fromStdString(vanishing.string());
  MainWindow w;
  configure(w, dir / "sessions.db", false, long_model, 16);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_TRUE(loaded(w, long_model)) << w.statusText().toStdString();
  const QString model_line = w.modelText();

  // The engine is busy reading a long prompt when the folder is chosen, and the folder is gone when it gets to it.
  QSignalSpy done(&w, &MainWindow::jobDone);
  w.chat()->setInput(long_prompt());
  w.chat()->send();
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.statusText().contains("on a prompt of"); }, 60000)) << w.statusText().toStdString();
  set_model(w, gone);
  fs::remove_all(vanishing);
  w.stop();
  ASSERT_TRUE(done.wait(60000));
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.statusText().startsWith("Error"); }, 60000)) << w.statusText().toStdString();
  EXPECT_EQ(w.statusText(), "Error: " + gone + ": no such file or directory (" + long_model + " stays loaded)");
  EXPECT_EQ(w.modelText(), model_line) << "the status bar still names the model that is loaded";

  // A turn on the missing folder fails in the transcript, one line naming it; the loaded model is not freed for it.
  ASSERT_TRUE(chat_turn(w, kPrompt));
  EXPECT_TRUE(w.chat()->transcriptText().contains("[error: " + gone + ": no such file or directory]"))
      << w.chat()->transcriptText().right(200).toStdString();
  expect_chat_usable(w);
  const QStringList seen = statuses_during(w, [&] {
    set_model(w, long_model);
    ASSERT_TRUE(loaded(w, long_model)) << w.statusText().toStdString();
  });
  for (const QString& s : seen) EXPECT_FALSE(s.startsWith("Loading")) << "it was freed and loaded again:\n" << seen.join('\n').toStdString();
}

TEST(GuiFaults, StopDuringALongPromptsPrefillEndsItWithinALayer) {
  const fs::path dir = scratch("stop-prefill");
  fs::create_directories(dir / "long");
  const QString long_model = long_context_model(dir / "long");
  MainWindow w;
  configure(w, dir / "sessions.db", false, long_model, 1);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_TRUE(loaded(w, long_model)) << w.statusText().toStdString();
  QSignalSpy done(&w, &MainWindow::jobDone);

  // First the prompt read to its end (one token after it), to know how long its prefill takes on this machine now.
  QElapsedTimer full_clock;
  full_clock.start();
  ASSERT_TRUE(chat_turn(w, long_prompt()));
  const qint64 full_ms = full_clock.elapsed();
  ASSERT_EQ(w.traces().lane(0).steps.size(), 1u);
  done.clear();

  // Again, with Stop a quarter of the way into the prefill (the status bar says the prompt is being read just before
  // it starts): a waiting Stop rather than one that lands before the first layer.
  set_max_tokens(w, 16);
  button(w.chat(), "Regenerate")->click();
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.statusText().contains("on a prompt of"); }, 60000)) << w.statusText().toStdString();
  QTest::qWait(int(full_ms / 4));
  ASSERT_TRUE(w.busy()) << "the prefill ended before Stop: " << full_ms << " ms";
  QElapsedTimer stop_clock;
  stop_clock.start();
  w.stop();
  ASSERT_TRUE(done.wait(60000));
  const qint64 stop_ms = stop_clock.elapsed();
  QApplication::processEvents();
  std::printf("Stop a quarter into the prefill: done %lld ms after Stop; the whole prefill takes %lld ms\n",
              (long long)stop_ms, (long long)full_ms);
  EXPECT_TRUE(w.traces().lane(0).steps.empty()) << "the prefill ran to its end (before: Stop waited for it, then the first step came)";
  EXPECT_TRUE(w.chat()->transcriptText().endsWith("[stopped]")) << w.chat()->transcriptText().right(80).toStdString();
  expect_chat_usable(w);
  // One of the model's 8 layers at most: well under the three quarters of the prefill that were left.
  EXPECT_LT(stop_ms * 2, full_ms) << "Stop should end the prefill within a layer or two";
}

int main(int argc, char** argv) {
  // First, before any thread: the tmpfs mounts stay in this process's own mount namespace.
  test::private_namespace_status() = test::enter_private_mount_namespace();
  // Keep the user's QSettings and session store out of the tests.
  const auto tmp = fs::temp_directory_path() / ("specscope-gui-faults-home-" + std::to_string(getpid()));
  fs::create_directories(tmp);
  qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString((tmp / "config").string()));
  qputenv("XDG_DATA_HOME", QByteArray::fromStdString((tmp / "data").string()));
  specscope::ui::set_opengl_defaults();
  QApplication app(argc, argv);
  QApplication::setOrganizationName("SpecScopeFaultsTest");
  QApplication::setApplicationName("SpecScopeFaultsTest");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
