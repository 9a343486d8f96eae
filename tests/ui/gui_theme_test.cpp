// The dark theme (issue 18 item 4), under Xvfb: token text on the provenance tints reads in both themes, also
// for an answer drawn before the theme changed (WCAG contrast >= 4.5, computed from the documents' own formats
// in Chat and Compare); the charts follow the theme and the runs keep their colours; disabled buttons look
// disabled (their label's contrast, measured on the rendered button, well below an enabled one's).
//
// Before: an answer drawn in the light theme kept its pale tints with the dark palette's near-white text (about
// 1.2:1), the dark theme's deepest tints gave 3.1:1 and 3.8:1, the charts stayed white, and the dark palette gave
// disabled buttons the enabled label colour (the same contrast).
#include <gtest/gtest.h>

#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QDir>
#include <QPushButton>
#include <QTest>
#include <QTextBlock>
#include <map>

#include "runs/trace_store.h"
#include "tests/ui/chain_step.h"
#include "tests/ui/gui_main.h"
#include "ui/main/main_window.h"
#include "ui/views/chat_view.h"
#include "ui/views/compare_view.h"
#include "ui/views/provenance.h"
#include "ui/views/statistics_view.h"
#include "ui/views/token_text_view.h"

using namespace specscope;
using namespace specscope::ui;
using specscope::test::chain_step;
using specscope::test::piece_of;

namespace {

struct Contrast {
  double lowest = 99;
  int tinted = 0;  // fragments with a provenance tint
};

// Every tinted run of text in the view: its text colour (its own, else the view's palette) against its tint.
Contrast tint_contrast(TokenTextView* view) {
  view->flush();
  Contrast c;
  for (QTextBlock b = view->document()->begin(); b.isValid(); b = b.next())
    for (auto it = b.begin(); !it.atEnd(); ++it) {
      const QTextCharFormat f = it.fragment().charFormat();
      if (f.background().style() == Qt::NoBrush) continue;
      const QColor fg = f.foreground().style() != Qt::NoBrush ? f.foreground().color() : view->palette().color(QPalette::Text);
      c.lowest = std::min(c.lowest, contrast_ratio(fg, f.background().color()));
      ++c.tinted;
    }
  return c;
}

double luminance(QRgb p) { return contrast_ratio(QColor(p), Qt::black) * 0.05 - 0.05; }

// A rendered button's label contrast: its most common colour (the face) against the colour that differs from it
// most (the glyphs' cores), inside the frame.
double label_contrast(QPushButton* b) {
  const QImage img = b->grab().toImage();
  std::map<QRgb, int> counts;
  for (int y = 5; y < img.height() - 5; ++y)
    for (int x = 5; x < img.width() - 5; ++x) ++counts[img.pixel(x, y) | 0xff000000u];
  QRgb face = 0;
  int most = 0;
  for (auto [rgb, n] : counts)
    if (n > most) most = n, face = rgb;
  double best = 1;
  for (auto [rgb, n] : counts) best = std::max(best, contrast_ratio(QColor(rgb), QColor(face)));
  return best;
}

QPushButton* chat_button(MainWindow& w, const QString& text) {
  for (auto* b : w.chat()->findChildren<QPushButton*>())
    if (b->text() == text) return b;
  return nullptr;
}

// Where the views are saved as PNGs for a look (the end-to-end test's folder when ctest runs it).
QString shot(const QString& name) {
  const QString d = qEnvironmentVariable("SPECSCOPE_SCREENSHOTS", QDir::tempPath() + "/specscope-screenshots");
  QDir().mkpath(d);
  return d + "/" + name;
}

double mean_luminance(const QImage& img) {
  double sum = 0;
  long n = 0;
  for (int y = 0; y < img.height(); y += 4)
    for (int x = 0; x < img.width(); x += 4, ++n) sum += luminance(img.pixel(x, y));
  return n ? sum / double(n) : 0;
}

}  // namespace

TEST(GuiTheme, TokenTextOnProvenanceTintsReadsInBothThemesAndAcrossAChange) {
  MainWindow w;
  w.applyTheme(false);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  auto* chat = w.chat()->findChild<TokenTextView*>("chatTranscript");
  auto* lane = w.compare()->findChildren<TokenTextView*>().value(0);
  ASSERT_NE(chat, nullptr);
  ASSERT_NE(lane, nullptr);
  auto add_step = [&](int i) {
    const StepRecord s = chain_step(i);
    w.chat()->appendStep(s, piece_of(s));
    w.compare()->laneStepText(0, s, piece_of(s));
  };
  auto check = [&](const char* when) {
    for (auto [name, view] : {std::pair{"chat", chat}, {"compare lane", lane}}) {
      const Contrast c = tint_contrast(view);
      EXPECT_GE(c.tinted, 7) << name << ", " << when << ": six depths and a bonus";
      EXPECT_GE(c.lowest, 4.5) << name << ", " << when;
    }
  };
  auto theme = [&](bool dark) {
    w.applyTheme(dark);
    QApplication::processEvents();  // the views' palettes follow the application's
  };
  add_step(1);
  check("light theme");
  theme(true);  // the answer drawn in the light theme is still on screen
  check("after switching to dark");
  add_step(2);
  check("dark theme");
  theme(true);
  EXPECT_TRUE(w.grab().save(shot("dark-chat.png")));
  theme(false);
  check("after switching back to light");
  // The tints themselves, for each theme's text colour: the pairs the views use.
  for (bool dark : {false, true}) {
    for (int d = 1; d <= 6; ++d) EXPECT_GE(contrast_ratio(token_text_color(dark), accepted_color(d, dark)), 4.5) << d;
    EXPECT_GE(contrast_ratio(token_text_color(dark), bonus_color(dark)), 4.5);
  }
}

TEST(GuiTheme, ChartsFollowTheThemeAndRunsKeepTheirColours) {
  MainWindow w;
  w.resize(1400, 860);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  runs::TraceStore store;
  runs::RunTrace t;
  t.method = "eagle2";
  store.reset({t});
  for (int i = 0; i < 5; ++i) store.append(0, chain_step(i), piece_of(chain_step(i)).toStdString());
  w.statistics()->setRuns({&store.lane(0)});
  w.showTab("statistics");
  for (bool dark : {true, false, true}) {
    w.applyTheme(dark);
    QTest::qWait(50);
    const auto views = w.statistics()->findChildren<QChartView*>();
    ASSERT_EQ(views.size(), 7);  // six statistics and the cost model's step-cost curve
    for (QChartView* v : views) {
      EXPECT_EQ(v->chart()->theme(), dark ? QChart::ChartThemeDark : QChart::ChartThemeLight) << v->chart()->title().toStdString();
      for (QAbstractSeries* s : v->chart()->series())
        if (auto* bars = qobject_cast<QBarSeries*>(s); bars && !bars->barSets().isEmpty() &&
                                                       v->chart()->title().startsWith("Accepted"))
          EXPECT_EQ(bars->barSets().first()->color(), QColor(0x00, 0x72, 0xB2)) << "the first run is Okabe-Ito blue";
    }
    const QImage view = w.statistics()->grab().toImage();
    if (dark) EXPECT_TRUE(view.save(shot("dark-statistics.png")));
    const double mean = mean_luminance(view);
    if (dark) EXPECT_LT(mean, 0.25) << "dark charts";
    else EXPECT_GT(mean, 0.6) << "light charts";
  }
}

TEST(GuiTheme, DisabledButtonsLookDisabledInBothThemes) {
  MainWindow w;
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QPushButton* send = chat_button(w, "Send");  // enabled while the chat is idle
  QPushButton* stop = chat_button(w, "Stop");  // disabled while the chat is idle
  ASSERT_NE(send, nullptr);
  ASSERT_NE(stop, nullptr);
  ASSERT_TRUE(send->isEnabled());
  ASSERT_FALSE(stop->isEnabled());
  for (bool dark : {false, true}) {
    w.applyTheme(dark);
    QTest::qWait(20);
    const double enabled = label_contrast(send), disabled = label_contrast(stop);
    std::printf("[theme] %s: enabled label %.1f:1, disabled %.1f:1\n", dark ? "dark" : "light", enabled, disabled);
    EXPECT_LT(disabled, 0.6 * enabled) << (dark ? "dark" : "light") << ": a disabled label is visibly dimmer";
    EXPECT_GE(disabled, 1.5) << "and can still be made out";
  }
}

SPECSCOPE_GUI_TEST_MAIN("theme")
