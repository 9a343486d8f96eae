// The model picker (issue 21 item 3), under Xvfb, on the model stores of tests/model_store_fixtures.h built in a
// home of the test's own (HOME and OLLAMA_MODELS point at them, as on a user's machine): File > Open model… opens it
// at once, searching; the models arrive grouped by store under the shipped family; the search box filters them; the
// Ollama fixture model is chosen, the status bar says it is loading straight away, the load reports its progress to
// the end while the event loop keeps turning, and a chat message on it gets an answer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <QAction>
#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTest>
#include <QTimer>
#include <QTreeWidget>
#include <filesystem>

#include "engine/discovery/model_spec.h"
#include "engine/model/family_manifest.h"
#include "tests/model_store_fixtures.h"
#include "tests/ui/gui_main.h"
#include "ui/main/main_window.h"
#include "ui/views/chat_view.h"
#include "ui/views/model_picker.h"
#include "ui/views/settings_view.h"

using namespace specscope;
using namespace specscope::ui;

namespace {

namespace fs = std::filesystem;

QStringList visible_groups(QTreeWidget* tree) {
  QStringList out;
  for (int i = 0; i < tree->topLevelItemCount(); ++i)
    if (!tree->topLevelItem(i)->isHidden()) out << tree->topLevelItem(i)->text(0).section(" (", 0, 0);
  return out;
}

QStringList visible_models(QTreeWidget* tree) {
  QStringList out;
  for (int i = 0; i < tree->topLevelItemCount(); ++i) {
    const QTreeWidgetItem* g = tree->topLevelItem(i);
    if (g->isHidden()) continue;
    for (int j = 0; j < g->childCount(); ++j) out << g->child(j)->text(0);
  }
  return out;
}

QAction* file_menu_action(MainWindow& w, const QString& object_name) {
  for (QAction* top : w.menuBar()->actions())
    if (top->menu() && QString(top->text()).remove('&') == "File")
      for (QAction* a : top->menu()->actions())
        if (a->objectName() == object_name) return a;
  return nullptr;
}

}  // namespace

TEST(GuiModelPicker, OpensFromTheFileMenuFiltersAndChatsOnTheOllamaModel) {
  const test::ModelStores stores = test::build_model_stores(
      (fs::temp_directory_path() / ("specscope_gui_picker_" + std::to_string(::getpid()))).string());
  stores.use_as_environment();
  const std::string ollama_blob = discovery::resolve_model_spec("ollama:tiny", stores.roots());

  MainWindow w;
  AppSettings a = SettingsView::defaults();
  a.record = false;
  a.max_tokens = 8;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  w.resize(1400, 860);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.statusText().startsWith("Loaded"); }, 60000)) << w.statusText().toStdString();

  // File > Open model…: the dialog is there at once, still searching (discovery runs off the UI thread).
  QAction* open = file_menu_action(w, "openModelAction");
  ASSERT_NE(open, nullptr) << "File > Open model…";
  open->trigger();
  auto* picker = w.findChild<ModelPicker*>("modelPicker");
  ASSERT_NE(picker, nullptr);
  EXPECT_TRUE(picker->isVisible());
  EXPECT_TRUE(picker->searching());
  EXPECT_TRUE(picker->findChild<QLabel*>("modelPickerStatus")->text().startsWith("Searching")) << "before any row";
  QSignalSpy listed(picker, &ModelPicker::listed);
  ASSERT_TRUE(listed.wait(30000));

  auto* tree = picker->findChild<QTreeWidget*>("modelTree");
  ASSERT_NE(tree, nullptr);
  EXPECT_EQ(visible_groups(tree), (QStringList{"Shipped with SpecScope", "Ollama", "LM Studio", "Hugging Face cache"}));
  EXPECT_TRUE(visible_models(tree).contains("tiny:latest"));
  EXPECT_TRUE(visible_models(tree).contains("specscope/tinyvocab_target"));
  // The shipped base is selected (it is the current target), with its family's drafters offered.
  auto* eagle = picker->findChild<QComboBox*>("drafterEagle");
  ASSERT_NE(eagle, nullptr);
  EXPECT_TRUE(eagle->isEnabled());
  EXPECT_TRUE(same_path(eagle->currentData().toString().toStdString(), w.settingsView()->settings().eagle_head.toStdString()));

  // The search box: every word must match (name, spec, architecture or type).
  auto* search = picker->findChild<QLineEdit*>("modelSearch");
  ASSERT_NE(search, nullptr);
  QTest::keyClicks(search, "tiny ollama");
  EXPECT_EQ(visible_groups(tree), QStringList{"Ollama"});
  EXPECT_EQ(visible_models(tree), (QStringList{"tiny:latest", "someone/tiny2:q8"}));
  search->clear();
  QTest::keyClicks(search, "qwen2");
  EXPECT_EQ(visible_groups(tree), QStringList{"LM Studio"});
  search->clear();
  EXPECT_EQ(visible_groups(tree).size(), 4);

  // A model that cannot be the target cannot be chosen, and says why.
  auto* use = picker->findChild<QPushButton*>("useModel");
  ASSERT_TRUE(picker->selectModel("other/mamba-GGUF/bad_arch.gguf"));
  EXPECT_FALSE(use->isEnabled());
  EXPECT_TRUE(picker->findChild<QLabel*>("modelDetails")->text().contains("Cannot be the target"));

  if (const QByteArray dir = qgetenv("SPECSCOPE_SCREENSHOTS"); !dir.isEmpty()) {
    picker->selectModel("specscope/tinyvocab_target");
    picker->grab().save(QString::fromUtf8(dir) + "/model_picker.png");
  }

  // The Ollama fixture: discovery pairs an EAGLE head from the hub cache with it (eagle1, eagle2), and nothing else.
  ASSERT_TRUE(picker->selectModel("ollama:tiny:latest"));
  ASSERT_TRUE(use->isEnabled());
  const std::string head = stores.snapshot("specscope/wide_eagle1");
  EXPECT_TRUE(eagle->isEnabled());
  EXPECT_TRUE(same_path(eagle->currentData().toString().toStdString(), head)) << eagle->currentText().toStdString();
  EXPECT_TRUE(eagle->currentText().startsWith("specscope/wide_eagle1")) << eagle->currentText().toStdString();
  for (const char* role : {"drafterEagle3", "drafterMedusa", "drafterDraft"})
    EXPECT_FALSE(picker->findChild<QComboBox*>(role)->isEnabled()) << role;
  // The event loop's pulse while the model loads: a 5 ms timer's longest wait.
  QElapsedTimer clock;
  clock.start();
  qint64 last_tick = 0, longest_wait = 0;
  QTimer pulse;
  QObject::connect(&pulse, &QTimer::timeout, [&] {
    longest_wait = std::max(longest_wait, clock.elapsed() - last_tick);
    last_tick = clock.elapsed();
  });
  pulse.start(5);
  const QPointer<ModelPicker> open_picker(picker);  // it deletes itself once closed
  QTest::mouseClick(use, Qt::LeftButton);
  EXPECT_TRUE(!open_picker || !open_picker->isVisible());
  const AppSettings chosen = w.settingsView()->settings();
  EXPECT_TRUE(same_path(chosen.model_path.toStdString(), ollama_blob));
  EXPECT_TRUE(same_path(chosen.eagle_head.toStdString(), head));
  EXPECT_TRUE(chosen.draft_path.isEmpty() && chosen.eagle3_head.isEmpty() && chosen.medusa_head.isEmpty() &&
              chosen.streaming_path.isEmpty())
      << "none of the shipped family's drafters is kept for another target";
  EXPECT_EQ(w.statusText(), QString("Loading %1…").arg(chosen.model_path)) << "said at once";
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.statusText().startsWith("Loaded"); }, 60000)) << w.statusText().toStdString();
  QTest::qWait(50);
  pulse.stop();
  EXPECT_LT(longest_wait, 500) << "the UI thread was blocked while the model loaded";
  auto* bar = w.statusBar()->findChild<QProgressBar*>();
  ASSERT_NE(bar, nullptr);
  EXPECT_EQ(bar->maximum(), 1000) << "the load reported its progress";
  EXPECT_EQ(bar->value(), 1000) << "to the end";

  // A chat on it, with EAGLE-2 (the app's default method) drafting with the head the picker offered.
  ASSERT_EQ(w.settingsView()->settings().method, "eagle2");
  QSignalSpy done(&w, &MainWindow::jobDone);
  w.chat()->setInput("Hello");
  w.chat()->send();
  ASSERT_TRUE(done.wait(120000));
  EXPECT_FALSE(w.statusText().startsWith("Error")) << w.statusText().toStdString();
  ASSERT_EQ(w.traces().lanes(), 1);
  EXPECT_TRUE(same_path(w.traces().lane(0).target, ollama_blob));
  EXPECT_EQ(w.traces().lane(0).method, "eagle2");
  EXPECT_GT(w.traces().lane(0).tokens(), 0);
  EXPECT_FALSE(w.chat()->lastAnswer().isEmpty());
  EXPECT_TRUE(w.chat()->transcriptText().contains(w.chat()->lastAnswer()));

  // Settings' "Choose…" opens the same picker, on the target now chosen.
  w.showTab("settings");
  auto* choose = w.settingsView()->findChild<QPushButton*>("chooseModel");
  ASSERT_NE(choose, nullptr);
  QTest::mouseClick(choose, Qt::LeftButton);
  auto* again = w.findChild<ModelPicker*>("modelPicker");
  ASSERT_NE(again, nullptr);
  QSignalSpy listed_again(again, &ModelPicker::listed);
  ASSERT_TRUE(listed_again.wait(30000));
  EXPECT_EQ(again->choice().name, "ollama:tiny:latest") << "the current target is selected";
  again->reject();

  w.close();
  std::error_code ec;
  fs::remove_all(stores.home, ec);
}

// Opt-in, for a large file (SPECSCOPE_PICKER_BIG_GGUF=/path/to/a-multi-gigabyte.gguf): chosen as the file dialog
// chooses it, the status bar's bar moves through many values while the weights are checked, and the event loop
// never waits long. The fixtures load in milliseconds, too fast to show either.
TEST(GuiModelPicker, ALargeGgufLoadsWithProgressWhileTheAppStaysResponsive) {
  const QString big = qEnvironmentVariable("SPECSCOPE_PICKER_BIG_GGUF");
  if (big.isEmpty()) GTEST_SKIP() << "set SPECSCOPE_PICKER_BIG_GGUF to a large GGUF file";
  MainWindow w;
  AppSettings a = SettingsView::defaults();
  a.record = false;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.statusText().startsWith("Loaded"); }, 60000));
  auto* bar = w.statusBar()->findChild<QProgressBar*>();
  ASSERT_NE(bar, nullptr);
  QList<int> values;
  QObject::connect(bar, &QProgressBar::valueChanged, [&](int v) { values << v; });
  QElapsedTimer clock;
  clock.start();
  qint64 last_tick = 0, longest_wait = 0;
  QTimer pulse;
  QObject::connect(&pulse, &QTimer::timeout, [&] {
    longest_wait = std::max(longest_wait, clock.elapsed() - last_tick);
    last_tick = clock.elapsed();
  });
  pulse.start(5);
  w.settingsView()->chooseModel(ModelChoice{big, big, false, {}, {}, {}, {}});
  EXPECT_EQ(w.statusText(), "Loading " + big + "…");
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.statusText().startsWith("Loaded") || w.statusText().startsWith("Error"); },
                              600000));
  pulse.stop();
  ASSERT_TRUE(w.statusText().startsWith("Loaded")) << w.statusText().toStdString();
  std::printf("[picker] %s loaded in %.1f s; the bar took %lld values; the event loop's longest wait %lld ms\n",
              big.toUtf8().constData(), double(clock.elapsed()) / 1e3, (long long)values.size(), (long long)longest_wait);
  EXPECT_GE(values.size(), 10) << "the bar moves while the weights are checked";
  EXPECT_EQ(values.isEmpty() ? -1 : values.back(), 1000);
  EXPECT_LT(longest_wait, 500) << "the UI thread was blocked during the load";
}

SPECSCOPE_GUI_TEST_MAIN("picker")
