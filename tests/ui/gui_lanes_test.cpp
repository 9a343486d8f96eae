// Four race lanes (issue 18 item 5), under Xvfb on a 1600 x 1000 screen: the window with four lanes fits the
// screen (its minimum width is at most 1600 px), the lanes share the width equally, and each lane's stat line,
// at its longest (speedup and verdict against its target's reference), is shown whole: wrapped inside the
// label's width with every line inside its height, at 1600 px and at the window's narrowest.
#include <gtest/gtest.h>

#include <QFontMetrics>
#include <QLabel>
#include <QTest>
#include <QToolButton>
#include <algorithm>

#include "runs/job.h"
#include "tests/ui/gui_main.h"
#include "ui/main/main_window.h"
#include "ui/views/compare_view.h"
#include "ui/views/race_lane.h"

using namespace specscope;
using namespace specscope::ui;

namespace {

const int kScreenWidth = 1600;

std::vector<RaceLane*> visible_lanes(MainWindow& w) {
  std::vector<RaceLane*> out;
  for (auto* l : w.compare()->findChildren<RaceLane*>())
    if (l->isVisible()) out.push_back(l);
  std::sort(out.begin(), out.end(), [](RaceLane* a, RaceLane* b) { return a->x() < b->x(); });
  return out;
}

void expect_equal_widths_and_whole_stat_lines(MainWindow& w, const char* when) {
  QApplication::processEvents();
  const auto lanes = visible_lanes(w);
  ASSERT_EQ(lanes.size(), 4u) << when;
  const auto [narrow, wide] = std::minmax_element(lanes.begin(), lanes.end(), [](RaceLane* a, RaceLane* b) { return a->width() < b->width(); });
  EXPECT_LE((*wide)->width() - (*narrow)->width(), 3) << when << ": lanes of " << (*narrow)->width() << " and " << (*wide)->width() << " px";
  for (size_t l = 0; l < lanes.size(); ++l) {
    auto* stats = lanes[l]->findChild<QLabel*>("laneStats");
    ASSERT_NE(stats, nullptr);
    const QRect room = stats->contentsRect();
    const QRect need = QFontMetrics(stats->font()).boundingRect(QRect(0, 0, room.width(), 100000),
                                                                Qt::TextWordWrap, stats->text());
    EXPECT_LE(need.width(), room.width()) << when << ", lane " << l + 1 << ": " << stats->text().toStdString();
    EXPECT_LE(need.height(), room.height()) << when << ", lane " << l + 1 << ": every wrapped line is shown";
  }
}

}  // namespace

TEST(GuiLanes, FourLanesFitA1600PixelScreenShareItEquallyAndShowTheirStatLinesWhole) {
  MainWindow w;
  w.compare()->setLaneMethods({"eagle2", "medusa", "streaming", "pld"});
  w.showTab("compare");
  w.resize(kScreenWidth, 1000);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  EXPECT_LE(w.minimumSizeHint().width(), kScreenWidth);
  EXPECT_LE(w.minimumSize().width(), kScreenWidth);
  // With every lane's editor open (target, drafter, options) too.
  for (auto* b : w.compare()->findChildren<QToolButton*>())
    if (b->isCheckable()) b->setChecked(true);
  QApplication::processEvents();
  EXPECT_LE(w.minimumSizeHint().width(), kScreenWidth);

  // Each lane at the end of a race: the longest stat line there is.
  std::vector<runs::Lane> lanes;
  for (const char* m : {"eagle2", "medusa", "streaming", "pld"})
    lanes.push_back({m, MethodSpec{m, "", "", {}}, std::string("assets/models/") + (m == std::string("streaming") ? "streaming" : "base")});
  w.compare()->runStarted(lanes, true);
  for (int l = 0; l < 4; ++l) {
    RunSummary s;
    s.method = lanes[size_t(l)].label;
    s.tau = 3.1416;
    s.tokens_per_second = 1234.5;
    s.target_forwards = 123;
    s.speedup_vs_vanilla = 1.234;
    w.compare()->laneFinished(l, s, true);
  }
  w.compare()->runFinished(false);
  ASSERT_TRUE(w.compare()->laneStatLine(2).contains("same text as its reference")) << w.compare()->laneStatLine(2).toStdString();

  // A stat line that did not wrap held its lane (and the window) to its own width: 4 x 600 px.
  EXPECT_LE(w.minimumSizeHint().width(), kScreenWidth) << "with the stat lines at their longest";
  expect_equal_widths_and_whole_stat_lines(w, "at 1600 px");
  w.resize(w.minimumSizeHint().width(), 1000);
  QTest::qWait(50);
  expect_equal_widths_and_whole_stat_lines(w, "at the narrowest");
}

// A lane's step tooltip on a mixture-of-experts target says how many experts the step's forward ran (the step's
// experts_per_layer); on a dense target it says nothing of experts.
TEST(GuiLanes, AStepTooltipGivesTheExpertsItsForwardRan) {
  runs::RunTrace t;
  t.method = "sps";
  StepRecord prefill;
  prefill.target_tokens = 6;
  StepRecord step;
  step.step = 1;
  step.root_token = 7;
  step.target_tokens = 5;
  step.committed = {9};
  for (StepRecord* s : {&prefill, &step}) t.steps.push_back(*s);
  t.pieces = {"a", "b"};
  t.tokens_before = {0, 1};
  EXPECT_FALSE(RaceLane::describeStep(t, 1).contains("experts")) << "a dense target";
  t.steps[1].experts_per_layer = 17.5f;
  const QString tip = RaceLane::describeStep(t, 1);
  EXPECT_TRUE(tip.contains("17.5 experts per layer ran")) << tip.toStdString();
}

SPECSCOPE_GUI_TEST_MAIN("lanes")
