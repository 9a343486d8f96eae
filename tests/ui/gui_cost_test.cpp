// The cost model beside the statistics (issue 20 item 2), under Xvfb: after an EAGLE-2 answer the worker hands the
// app this machine's step-cost curve for the target (measured once, then cached); the statistics view shows the
// run's expected speedup next to its measured one with the sentence saying why it wins or which term makes it lose,
// and a chart of the curve with the run's tree sizes marked; the inspector's header breaks the shown step down.
#include <gtest/gtest.h>

#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QLineSeries>
#include <QRegularExpression>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QTest>

#include "tests/ui/gui_main.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/main/main_window.h"
#include "ui/views/chat_view.h"
#include "ui/views/settings_view.h"
#include "ui/views/statistics_view.h"

using namespace specscope;
using namespace specscope::ui;

TEST(GuiCost, StatisticsShowExpectedSpeedupVerdictAndTheCostCurve) {
  MainWindow w;
  AppSettings a = SettingsView::defaults();  // eagle2 on the shipped family
  a.max_tokens = 24;
  a.record = false;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  w.resize(1500, 900);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QSignalSpy done(&w, &MainWindow::jobDone);
  w.chat()->setInput("What does the word harbor mean?");
  w.chat()->send();
  ASSERT_TRUE(done.wait(300000));
  w.showTab("statistics");
  QTest::qWait(50);

  auto* text = w.statistics()->findChild<QLabel*>("costModelText");
  ASSERT_NE(text, nullptr);
  const QString shown = text->text();
  EXPECT_TRUE(shown.contains(QRegularExpression("expected \\d+\\.\\d\\dx"))) << shown.toStdString();
  EXPECT_TRUE(shown.contains(QRegularExpression("Expected \\d+\\.\\d\\dx \\(tau [^)]*\\): it (wins|loses on (drafting|verification))")))
      << shown.toStdString();

  auto* chart = w.statistics()->findChild<QChartView*>("costChart");
  ASSERT_NE(chart, nullptr);
  QLineSeries* curve = nullptr;
  QScatterSeries* trees = nullptr;
  for (QAbstractSeries* s : chart->chart()->series()) {
    if (auto* l = qobject_cast<QLineSeries*>(s); l && s->objectName() == "stepCostSeries") curve = l;
    if (auto* d = qobject_cast<QScatterSeries*>(s)) trees = d;
  }
  ASSERT_NE(curve, nullptr) << "the chart has the step-cost series";
  EXPECT_GE(curve->count(), 2);
  ASSERT_NE(trees, nullptr) << "the run's tree sizes are marked";
  EXPECT_GE(trees->count(), 1);
  for (const QPointF& p : trees->points()) EXPECT_GT(p.y(), 0);

  // The inspector: the last decoding step broken down.
  TreeInspectorWidget* insp = w.inspector();
  ASSERT_GT(insp->stepCount(), 1);
  insp->setCurrentStep(insp->stepCount() - 1);
  const QString step = insp->stepCostText();
  EXPECT_TRUE(step.contains(QRegularExpression(
      "^verify \\d+\\.\\d ms \\(\\d+ tokens?\\) \\+ draft \\d+\\.\\d ms for \\d+ tokens?; vanilla would take \\d+\\.\\d ms$")))
      << step.toStdString();
  if (const QByteArray dir = qgetenv("SPECSCOPE_SCREENSHOTS"); !dir.isEmpty())
    w.statistics()->grab().save(QString::fromUtf8(dir) + "/cost_model.png");
}

SPECSCOPE_GUI_TEST_MAIN("cost")
