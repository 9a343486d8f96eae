// Linked views (issue 20 item 4), under Xvfb, on sessions written straight into a store and replayed (no model):
// the inspector's step timeline zooms about the cursor and selects a range with a shift-drag; the statistics then
// count exactly those steps (equal to runs::compute_statistics over the range, the Qt-free definition) and say so;
// a timeline bar, a chat token, a statistics point and a compare lane's token each open their step in the
// inspector; File > Export selected range as web page writes exactly those steps; Escape clears the range.
#include <gtest/gtest.h>

#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTest>
#include <QTextBlock>
#include <QWheelEvent>

#include "runs/cost_model.h"
#include "runs/run_statistics.h"
#include "tests/html_export_support.h"
#include "tests/session_test_support.h"
#include "tests/ui/gui_main.h"
#include "tests/ui/replay_fixture.h"
#include "ui/engine/replay_controller.h"
#include "ui/engine/step_focus.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/main/main_window.h"
#include "ui/views/chat_view.h"
#include "ui/views/compare_view.h"
#include "ui/views/settings_view.h"
#include "ui/views/statistics_view.h"
#include "ui/views/token_text_view.h"

using namespace specscope;
using namespace specscope::ui;
namespace fs = std::filesystem;

namespace {

constexpr int kSteps = 40;

void settle(int ms = 60) {
  QTest::qWait(ms);
  QApplication::processEvents();
}

// The window on a store of our own, recording nothing, replaying session `id` to its end.
void open_replay(MainWindow& w, const fs::path& db, int64_t id) {
  AppSettings a = SettingsView::defaults();
  a.session_db = QString::fromStdString(db.string());
  a.record = false;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  w.openSession(id);
  ASSERT_TRUE(w.replay()->isOpen()) << w.statusText().toStdString();
  w.replay()->pause();
  w.replay()->seek(w.replay()->length());
  settle(150);
}

// Makes sure the inspector has drawn a frame at its current size (the timeline's geometry comes from it).
void draw(TreeInspectorWidget* t) {
  t->repaint();
  (void)t->frame();
  settle(30);
}

void send_mouse(QWidget* w, QEvent::Type type, QPoint at, Qt::MouseButton button, Qt::MouseButtons buttons,
                Qt::KeyboardModifiers mods = {}) {
  QMouseEvent e(type, QPointF(at), QPointF(w->mapToGlobal(at)), button, buttons, mods);
  QApplication::sendEvent(w, &e);
}

void wheel(QWidget* w, QPoint at, int notches) {
  QWheelEvent e(QPointF(at), QPointF(w->mapToGlobal(at)), QPoint(), QPoint(0, 120 * notches), Qt::NoButton,
                Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(w, &e);
}

// Shift-drag on the timeline from step index a to step index b.
void select_on_timeline(TreeInspectorWidget* t, int a, int b) {
  const QPoint pa = t->timelineBarPosition(a), pb = t->timelineBarPosition(b);
  ASSERT_GE(pa.x(), 0) << "bar " << a << " is not shown";
  ASSERT_GE(pb.x(), 0) << "bar " << b << " is not shown";
  send_mouse(t, QEvent::MouseButtonPress, pa, Qt::LeftButton, Qt::LeftButton, Qt::ShiftModifier);
  const QPoint mid((pa.x() + pb.x()) / 2, pa.y());
  send_mouse(t, QEvent::MouseMove, mid, Qt::NoButton, Qt::LeftButton, Qt::ShiftModifier);
  send_mouse(t, QEvent::MouseMove, pb, Qt::NoButton, Qt::LeftButton, Qt::ShiftModifier);
  send_mouse(t, QEvent::MouseButtonRelease, pb, Qt::LeftButton, Qt::NoButton, Qt::ShiftModifier);
  settle();
}

void click_bar(TreeInspectorWidget* t, int index) {
  const QPoint p = t->timelineBarPosition(index);
  ASSERT_GE(p.x(), 0) << "bar " << index << " is not shown";
  send_mouse(t, QEvent::MouseButtonPress, p, Qt::LeftButton, Qt::LeftButton);
  send_mouse(t, QEvent::MouseButtonRelease, p, Qt::LeftButton, Qt::NoButton);
  settle();
}

// Clicks a token of step `step` in a token view (the chat's transcript or a lane's text).
void click_step_text(TokenTextView* text, int step) {
  int pos = -1;
  for (int p = 0; p < text->document()->characterCount() && pos < 0; ++p)
    if (text->stepAt(p) == step && text->stepAt(p + 1) == step) pos = p;
  ASSERT_GE(pos, 0) << "no text of step " << step;
  QTextCursor c(text->document());
  c.setPosition(pos);
  text->setTextCursor(c);
  text->ensureCursorVisible();
  const QRect r = text->cursorRect(c);
  QTest::mouseClick(text->viewport(), Qt::LeftButton, {}, QPoint(r.left() + 2, r.center().y()));
  settle();
}

void screenshot(QWidget* w, const char* name) {
  if (const QByteArray dir = qgetenv("SPECSCOPE_SCREENSHOTS"); !dir.isEmpty()) {
    QDir().mkpath(QString::fromUtf8(dir));
    w->grab().save(QString::fromUtf8(dir) + "/" + name);
  }
}

QString current_tab(MainWindow& w) {
  auto* tabs = w.findChild<QTabWidget*>();
  return tabs ? tabs->tabText(tabs->currentIndex()) : QString();
}

std::vector<double> bar_values(QChartView* view) {
  std::vector<double> out;
  for (QAbstractSeries* s : view->chart()->series())
    if (auto* bars = qobject_cast<QBarSeries*>(s))
      for (QBarSet* set : bars->barSets())
        for (int i = 0; i < set->count(); ++i) out.push_back(set->at(i));
  return out;
}

}  // namespace

TEST(GuiLinked, TimelineZoomSelectsARangeThatFiltersTheStatisticsAndExports) {
  const fs::path dir = test::fresh_dir("gui-linked");
  const fs::path db = dir / "s.db";
  const int64_t id = test::replay::record_chat(db, kSteps);
  MainWindow w;
  w.resize(1500, 900);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  open_replay(w, db, id);
  TreeInspectorWidget* insp = w.inspector();
  ASSERT_EQ(insp->stepCount(), kSteps);
  draw(insp);
  const QRect bars = insp->timelineBars();
  ASSERT_FALSE(bars.isEmpty()) << "the timeline was not drawn";
  EXPECT_FALSE(insp->timelineZoomed());
  EXPECT_DOUBLE_EQ(insp->timelineSpan(), kSteps);

  // Zoom: three wheel notches over the timeline's right third keep the step under the cursor in place.
  const QPoint at(bars.left() + bars.width() * 2 / 3, bars.center().y());
  const double before = insp->timelineFirst() + (at.x() - bars.left()) / double(bars.width()) * insp->timelineSpan();
  wheel(insp, at, 3);
  settle();
  draw(insp);
  ASSERT_TRUE(insp->timelineZoomed());
  EXPECT_LT(insp->timelineSpan(), kSteps * 0.6);
  EXPECT_GT(insp->timelineFirst(), 0.0);
  const double after = insp->timelineFirst() + (at.x() - bars.left()) / double(bars.width()) * insp->timelineSpan();
  EXPECT_NEAR(after, before, 1.0) << "the zoom is about the cursor";

  // A click on a bar of the zoomed timeline opens that step.
  const int shown_first = int(std::ceil(insp->timelineFirst()));
  click_bar(insp, shown_first + 2);
  EXPECT_EQ(insp->currentStep(), shown_first + 2);
  EXPECT_EQ(w.stepFocus()->step(), shown_first + 2);

  // Shift-drag selects steps A..B.
  const int a = shown_first + 1, b = shown_first + 6;
  select_on_timeline(insp, a, b);
  EXPECT_EQ(insp->selectedRange(), std::make_pair(a, b));
  ASSERT_TRUE(w.stepFocus()->range().valid());
  EXPECT_EQ(w.stepFocus()->range(), (StepSelection{0, a, b}));

  // The statistics count exactly those steps: the numbers the view drew equal compute_statistics over the range.
  const auto& steps = w.traces().lane(0).steps;
  const runs::RunStatistics expected = runs::compute_statistics(steps, runs::StepSpan{a, b});
  const runs::RunStatistics whole = runs::compute_statistics(steps);
  const runs::RunStatistics shown = w.statistics()->shownStatistics(0);
  EXPECT_EQ(shown.accepted_length_histogram, expected.accepted_length_histogram);
  EXPECT_EQ(shown.tokens_per_second, expected.tokens_per_second);
  EXPECT_EQ(shown.step_index, expected.step_index);
  EXPECT_DOUBLE_EQ(shown.tau, expected.tau);
  EXPECT_NE(shown.tokens_per_second.size(), whole.tokens_per_second.size()) << "the range did not filter";
  EXPECT_NE(expected.tau, whole.tau);
  EXPECT_DOUBLE_EQ(w.statistics()->shownTau(0), expected.tau);
  auto* tau_chart = w.statistics()->findChild<QChartView*>("tauChart");
  ASSERT_NE(tau_chart, nullptr);
  const auto taus = bar_values(tau_chart);
  ASSERT_EQ(taus.size(), 1u);
  EXPECT_DOUBLE_EQ(taus[0], expected.tau) << "the τ bar shows the range's τ";
  auto* hist_chart = w.statistics()->findChild<QChartView*>("histogramChart");
  ASSERT_NE(hist_chart, nullptr);
  long total = 0;
  for (long c : expected.accepted_length_histogram) total += c;
  const auto shares = bar_values(hist_chart);
  ASSERT_GE(shares.size(), expected.accepted_length_histogram.size());
  for (size_t k = 0; k < expected.accepted_length_histogram.size(); ++k)
    EXPECT_NEAR(shares[k], 100.0 * double(expected.accepted_length_histogram[k]) / double(total), 1e-9) << k;
  const QString range_text = w.statistics()->rangeText();
  EXPECT_TRUE(range_text.startsWith(QString("Steps %1–%2 of %3").arg(steps[size_t(a)].step).arg(steps[size_t(b)].step).arg(steps.back().step)))
      << range_text.toStdString();

  screenshot(&w, "linked_timeline.png");
  // A point of the per-step chart opens its step in the inspector, whose tab comes to the front.
  w.showTab("statistics");
  settle(150);
  screenshot(&w, "linked_statistics.png");
  auto* throughput = w.statistics()->findChild<QChartView*>("throughputChart");
  ASSERT_NE(throughput, nullptr);
  ASSERT_FALSE(shown.step_index.empty());
  const int point_step = shown.step_index.back();
  const QPoint p = w.statistics()->throughputPoint(0, point_step);
  ASSERT_GE(p.x(), 0) << "step " << point_step << " has no point";
  QTest::mouseClick(throughput->viewport(), Qt::LeftButton, {}, p);
  settle(100);
  EXPECT_EQ(insp->currentStep(), point_step);
  EXPECT_EQ(current_tab(w), "Chat");

  // A chat token opens its step.
  auto* transcript = w.chat()->findChild<TokenTextView*>("chatTranscript");
  ASSERT_NE(transcript, nullptr);
  click_step_text(transcript, 9);
  EXPECT_EQ(insp->currentStep(), 9);
  EXPECT_EQ(w.stepFocus()->step(), 9);
  EXPECT_EQ(insp->selectedRange(), std::make_pair(a, b)) << "opening a step keeps the range";

  // File > Export selected range as web page: exactly steps A..B of the run.
  const fs::path page_path = dir / "range.html";
  EXPECT_EQ(w.exportSelectedRangeWebPage(QString::fromStdString(page_path.string())), QString());
  const auto blob = test::html::blob_of(test::read_bytes(page_path));
  ASSERT_TRUE(blob.is_object());
  EXPECT_EQ(blob["range"], (nlohmann::json{{"first", steps[size_t(a)].step}, {"last", steps[size_t(b)].step}}));
  ASSERT_EQ(blob["runs"].size(), 1u);
  std::vector<int> exported;
  for (const auto& st : blob["runs"][0]["steps"]) exported.push_back(st["step"].get<int>());
  std::vector<int> wanted;
  for (int i = a; i <= b; ++i) wanted.push_back(steps[size_t(i)].step);
  EXPECT_EQ(exported, wanted);

  // Escape on the timeline clears the range (before Run > Stop sees it); the statistics count every step again.
  w.activateWindow();
  insp->setFocus();
  ASSERT_TRUE(QTest::qWaitForWindowActive(&w));
  QTest::keyClick(insp, Qt::Key_Escape);
  settle();
  EXPECT_EQ(insp->selectedRange(), std::make_pair(-1, -1));
  EXPECT_FALSE(w.stepFocus()->range().valid());
  EXPECT_EQ(w.statistics()->shownStatistics(0).tokens_per_second, whole.tokens_per_second);
  EXPECT_TRUE(w.statistics()->rangeText().isEmpty());

  // A right-drag selects too; a double-click clears it, a second one shows every step again.
  draw(insp);
  const int c0 = int(std::ceil(insp->timelineFirst()));
  const QPoint pc = insp->timelineBarPosition(c0), pd = insp->timelineBarPosition(c0 + 3);
  send_mouse(insp, QEvent::MouseButtonPress, pc, Qt::RightButton, Qt::RightButton);
  send_mouse(insp, QEvent::MouseMove, pd, Qt::NoButton, Qt::RightButton);
  send_mouse(insp, QEvent::MouseButtonRelease, pd, Qt::RightButton, Qt::NoButton);
  settle();
  EXPECT_EQ(insp->selectedRange(), std::make_pair(c0, c0 + 3));
  EXPECT_EQ(w.stepFocus()->range(), (StepSelection{0, c0, c0 + 3}));
  QTest::mouseDClick(insp, Qt::LeftButton, {}, pc);
  settle();
  EXPECT_FALSE(w.stepFocus()->range().valid());
  EXPECT_TRUE(insp->timelineZoomed());
  QTest::mouseDClick(insp, Qt::LeftButton, {}, pc);
  settle();
  EXPECT_FALSE(insp->timelineZoomed());
}

// The cost-model line beside the statistics counts the selected range too: the expected speedup from the range's
// steps (runs::model_run_cost over the span, with its verdict), the measured one from the range's tokens and time
// against the reference's rate; cleared, the whole run's figures come back.
TEST(GuiLinked, TheCostModelLineCountsTheSelectedRange) {
  runs::RunTrace run;
  run.method = run.label = "eagle2";
  run.target = (fs::temp_directory_path() / "cost-model-target").string();
  for (int i = 0; i < kSteps; ++i) run.steps.push_back(test::replay::step(0, i));
  RunSummary summary = summarize("eagle2", run.steps);
  summary.tokens_per_second = 400;
  summary.speedup_vs_vanilla = 1.6;  // the reference made 250 tokens/s
  run.summary = summary;
  runs::StepCost cost;
  cost.ms = {{1, 1.0}, {2, 1.1}, {4, 1.3}, {8, 1.8}};

  StepFocus focus;
  StatisticsView view;
  view.setStepCost(QString::fromStdString(run.target), cost);
  view.setStepFocus(&focus);
  view.setRuns({&run});
  const auto whole = view.shownCostModel(0);
  ASSERT_TRUE(whole.has_value());
  EXPECT_DOUBLE_EQ(whole->expected_speedup, runs::model_run_cost(run.steps, cost).expected_speedup);
  EXPECT_DOUBLE_EQ(view.shownMeasuredSpeedup(0), 1.6);

  // Steps 4..7 accept 0, 1, 2, 3 drafts (the fixture's pattern): a τ and a speedup of their own.
  const runs::StepSpan span{4, 7};
  focus.selectRange(0, span.first, span.last);
  const auto ranged = view.shownCostModel(0);
  ASSERT_TRUE(ranged.has_value());
  const runs::RunCostModel want = runs::model_run_cost(run.steps, span, cost);
  ASSERT_EQ(ranged->steps.size(), 4u);
  EXPECT_EQ(ranged->steps.front().step, 4);
  EXPECT_DOUBLE_EQ(ranged->expected_speedup, want.expected_speedup);
  EXPECT_NE(ranged->expected_speedup, whole->expected_speedup) << "the range did not reach the cost model";
  EXPECT_EQ(ranged->verdict, want.verdict);
  const double measured = runs::measured_speedup(run.steps, span, 250.0);
  EXPECT_NEAR(view.shownMeasuredSpeedup(0), measured, 1e-9);
  EXPECT_NE(view.shownMeasuredSpeedup(0), 1.6);
  const QString text = view.costModelText();
  EXPECT_TRUE(text.contains("over the selected steps")) << text.toStdString();
  EXPECT_TRUE(text.contains(QString("measured %1x").arg(measured, 0, 'f', 2))) << text.toStdString();
  EXPECT_TRUE(text.contains(QString("expected %1x").arg(want.expected_speedup, 0, 'f', 2))) << text.toStdString();
  EXPECT_TRUE(text.contains(QString::fromStdString(want.verdict).toHtmlEscaped())) << text.toStdString();

  focus.clearRange();
  EXPECT_DOUBLE_EQ(view.shownCostModel(0)->expected_speedup, whole->expected_speedup);
  EXPECT_DOUBLE_EQ(view.shownMeasuredSpeedup(0), 1.6);
  EXPECT_FALSE(view.costModelText().contains("over the selected steps"));
}

TEST(GuiLinked, ZoomStaysWhileStepsStreamIn) {
  const fs::path dir = test::fresh_dir("gui-linked-live");
  const fs::path db = dir / "s.db";
  const int64_t id = test::replay::record_chat(db, kSteps);
  MainWindow w;
  w.resize(1500, 900);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  open_replay(w, db, id);
  w.replay()->seek(10);  // steps 0..9 shown; the rest stream in as a live run's would
  settle();
  TreeInspectorWidget* insp = w.inspector();
  ASSERT_EQ(insp->stepCount(), 10);
  draw(insp);
  const QRect bars = insp->timelineBars();
  wheel(insp, QPoint(bars.right() - 2, bars.center().y()), 2);  // zoomed on the newest steps
  settle();
  ASSERT_TRUE(insp->timelineZoomed());
  const double span = insp->timelineSpan();
  for (int i = 0; i < 20; ++i) w.replay()->stepForward();
  settle();
  ASSERT_EQ(insp->stepCount(), 30);
  EXPECT_TRUE(insp->timelineZoomed());
  EXPECT_DOUBLE_EQ(insp->timelineSpan(), span) << "the zoom level stays";
  EXPECT_NEAR(insp->timelineFirst() + insp->timelineSpan(), 30.0, 1e-9) << "and the window follows the newest step";
}

TEST(GuiLinked, ACompareLanePositionOpensThatLanesStep) {
  const fs::path dir = test::fresh_dir("gui-linked-race");
  const fs::path db = dir / "s.db";
  const int64_t id = test::replay::record_race(db, 24);
  MainWindow w;
  w.resize(1500, 900);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  open_replay(w, db, id);
  ASSERT_EQ(w.traces().lanes(), 2);
  EXPECT_EQ(current_tab(w), "Compare");
  // A token of lane 2's text opens lane 2's step in the Compare tab's inspector.
  std::vector<TokenTextView*> texts;
  for (auto* t : w.compare()->findChildren<TokenTextView*>())
    if (t->isVisible() && !t->generatedText().isEmpty()) texts.push_back(t);
  ASSERT_GE(texts.size(), 2u);
  TokenTextView* lane2 = nullptr;
  for (auto* t : texts)
    if (t->generatedText() == w.compare()->laneText(1)) lane2 = t;
  ASSERT_NE(lane2, nullptr);
  click_step_text(lane2, 7);
  EXPECT_EQ(w.compare()->inspectedLane(), 1);
  EXPECT_EQ(w.compare()->laneInspector()->currentStep(), 7);
  EXPECT_EQ(w.stepFocus()->lane(), 1);
  EXPECT_EQ(w.stepFocus()->step(), 7);

  // A range selected on that lane's timeline filters its statistics to those steps and lane 1's to the same text.
  TreeInspectorWidget* lane_tree = w.compare()->laneInspector();
  draw(lane_tree);
  select_on_timeline(lane_tree, 4, 12);
  ASSERT_EQ(w.stepFocus()->range(), (StepSelection{1, 4, 12}));
  const auto& steps = w.traces().lane(1).steps;
  EXPECT_EQ(w.statistics()->shownStatistics(1).tokens_per_second,
            runs::compute_statistics(steps, runs::StepSpan{4, 12}).tokens_per_second);
  const runs::StepSpan other = span_in_lane(w.traces(), w.stepFocus()->range(), 0);
  ASSERT_LE(other.first, other.last);
  EXPECT_EQ(w.statistics()->shownStatistics(0).tokens_per_second,
            runs::compute_statistics(w.traces().lane(0).steps, other).tokens_per_second);
  // The text lane 1's steps 4..12 committed starts in lane 0's step other.first and ends in other.last.
  const auto& t1 = w.traces().lane(1);
  EXPECT_EQ(w.traces().step_at_token(0, t1.tokens_before[4]), other.first);

  // Opening another step of the same lane keeps its timeline's range; lane 1's miniature opens lane 1's step.
  click_step_text(lane2, 15);
  EXPECT_EQ(lane_tree->currentStep(), 15);
  EXPECT_EQ(lane_tree->selectedRange(), std::make_pair(4, 12));
  EXPECT_TRUE(w.stepFocus()->range().valid());
  TreeInspectorWidget* mini = w.compare()->laneMiniature(0);
  QTest::mouseClick(mini, Qt::LeftButton, {}, mini->rect().center());
  settle();
  EXPECT_EQ(w.compare()->inspectedLane(), 0);
  EXPECT_EQ(lane_tree->currentStep(), w.compare()->laneShownStep(0));
}

SPECSCOPE_GUI_TEST_MAIN("linked")
