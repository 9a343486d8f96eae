// The inspector's "why" panel in the app (issue 20 item 1), under Xvfb: a sampled (T > 0) EAGLE-2 answer, a click on
// a rejected node of its tree, and the side panel shows the verification step that decided it: the rule, p(x), the
// acceptance probability, the uniform draw u, the outcome, the target's top 5, and (when the bonus was drawn after
// that rejection) the residual's top 5 with the token drawn. The numbers are the node's own (the panel's content is
// sessions::explain_node, checked against the verification code in tests/why_panel_test.cpp).
#include <gtest/gtest.h>

#include <QLabel>
#include <QSignalSpy>
#include <QTest>
#include <cmath>

#include "tests/ui/gui_main.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/inspector/why_panel.h"
#include "ui/main/main_window.h"
#include "ui/views/chat_view.h"
#include "ui/views/settings_view.h"

using namespace specscope;
using namespace specscope::ui;

namespace {

struct Candidate {
  int index = -1, node = -1;
  bool drawn_after = false;  // the bonus was drawn from the residual this rejection left
};

// A rejected node that was tested (it has a u), preferring one the bonus was drawn after.
std::vector<Candidate> rejected_nodes(TreeInspectorWidget* insp) {
  std::vector<Candidate> out;
  for (int i = 0; i < insp->stepCount(); ++i) {
    insp->setCurrentStep(i);
    const StepRecord* st = insp->currentRecord();
    const int end = st->accepted_path.empty() ? -1 : st->accepted_path.back();
    for (const auto& n : st->nodes) {
      if (n.decision != NodeDecision::Rejected || std::isnan(n.u)) continue;
      bool last = true;
      for (const auto& m : st->nodes) last = last && !(m.parent == n.parent && m.id > n.id && !std::isnan(m.u));
      out.push_back({i, n.id, last && n.parent == end && st->bonus_source == BonusSource::Residual});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.drawn_after > b.drawn_after; });
  return out;
}

QString label(WhyPanel* why, const char* name) {
  auto* l = why->findChild<QLabel*>(name);
  return l ? l->text() : QString("<no label %1>").arg(name);
}

}  // namespace

TEST(GuiWhy, ClickingARejectedNodeOfASampledRunShowsTheDrawThatDecidedIt) {
  MainWindow w;
  AppSettings a = SettingsView::defaults();  // eagle2 on the shipped family
  a.max_tokens = 40;
  a.record = false;
  a.sampling.temperature = 1.0f;
  a.sampling.seed = 11;
  w.settingsView()->setSettings(a);
  emit w.settingsView()->changed();
  w.resize(1500, 900);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QSignalSpy done(&w, &MainWindow::jobDone);
  w.chat()->setInput("What does the word harbor mean?");
  w.chat()->send();
  ASSERT_TRUE(done.wait(300000));

  TreeInspectorWidget* insp = w.inspector();
  auto* why = w.findChild<WhyPanel*>("whyPanel");
  ASSERT_NE(why, nullptr);
  const auto candidates = rejected_nodes(insp);
  ASSERT_FALSE(candidates.empty()) << "a sampled EAGLE-2 answer of 40 tokens rejected no tested draft";

  // Click the first candidate that is drawn inside the view.
  Candidate picked;
  for (const auto& c : candidates) {
    insp->setCurrentStep(c.index);
    insp->frame();  // lay out and draw the step, so that its nodes have positions
    const QPoint at = insp->nodePosition(c.node);
    if (!insp->rect().contains(at)) continue;
    QTest::mouseClick(insp, Qt::LeftButton, Qt::NoModifier, at);
    picked = c;
    break;
  }
  ASSERT_GE(picked.node, 0) << "no rejected node was drawn inside the inspector";
  ASSERT_EQ(insp->selectedNode(), picked.node) << "the click selected the node under it";
  const DraftNode& n = insp->currentRecord()->nodes[size_t(picked.node)];
  const auto& shown = why->content();
  EXPECT_EQ(shown.title.rfind("Draft node " + std::to_string(picked.node), 0), 0u) << shown.title;
  EXPECT_NE(shown.rule.find("EAGLE-2"), std::string::npos) << "EAGLE-2 drafts its top-k by rule: " << shown.rule;
  EXPECT_EQ(label(why, "why_u"), QString::fromStdString(sessions::format_prob(n.u)));
  EXPECT_EQ(label(why, "why_accept"), QString::fromStdString(sessions::format_prob(n.accept_prob)));
  EXPECT_EQ(label(why, "why_p"), QString::fromStdString(sessions::format_prob(n.target_prob)));
  EXPECT_EQ(label(why, "why_outcome"), "rejected");
  EXPECT_GE(n.u, n.accept_prob) << "rejected means u >= the acceptance probability";
  const QString text = why->plainText();
  EXPECT_TRUE(text.contains(QString::fromStdString("u = " + sessions::format_prob(n.u)))) << text.toStdString();
  EXPECT_EQ(shown.top_k.size(), n.target_top_k.size());
  EXPECT_FALSE(shown.top_k.empty()) << "the target's top 5 are shown";
  if (picked.drawn_after) {
    EXPECT_FALSE(shown.residual.empty()) << text.toStdString();
    EXPECT_EQ(shown.row("drawn")->number, insp->currentRecord()->bonus_token);
  }
  EXPECT_TRUE(shown.missing.empty()) << shown.missing;
  if (const QByteArray dir = qgetenv("SPECSCOPE_SCREENSHOTS"); !dir.isEmpty())  // the README's picture
    w.grab().save(QString::fromUtf8(dir) + "/why_panel.png");

  // The selection belongs to its step: another step shows the hint, coming back shows the node again.
  insp->setCurrentStep(picked.index == 0 ? 1 : 0);
  EXPECT_TRUE(why->content().title.empty());
  EXPECT_TRUE(why->plainText().startsWith("Click a draft node"));
  insp->setCurrentStep(picked.index);
  EXPECT_EQ(why->content().title, shown.title);
}

SPECSCOPE_GUI_TEST_MAIN("why")
