#pragma once
// The inspector's "why" side panel: for the draft node selected in a tree inspector (live or replayed), the
// verification step that decided it, in the papers' terms. Its content is sessions::explain_node's (Qt-free, tested
// against the verification code); this widget only lays it out: rows of numbers, the verdict, bars for the target's
// top-k and the residual, and what the session did not record.
#include <QWidget>

#include "sessions/why_panel.h"

class QLabel;
class QGridLayout;

namespace specscope::ui {

class TreeInspectorWidget;
class WhyBars;

class WhyPanel : public QWidget {
  Q_OBJECT
 public:
  explicit WhyPanel(QWidget* parent = nullptr);
  // Follows the tree's selection and its step (a selection belongs to its step).
  void attach(TreeInspectorWidget* tree);
  void showNode(const StepRecord* step, int node);  // nullptr or -1: the hint to click a node

  const sessions::WhyPanel& content() const { return content_; }  // what is shown (empty title: the hint)
  QString plainText() const;                                      // every label's text, top to bottom

  QSize sizeHint() const override { return {300, 400}; }

 private:
  TreeInspectorWidget* tree_ = nullptr;
  sessions::WhyPanel content_;
  QLabel *hint_, *title_, *rule_, *verdict_, *top_title_, *residual_title_, *missing_;
  QWidget* rows_box_;
  QGridLayout* rows_;
  WhyBars *top_, *residual_;
};

}  // namespace specscope::ui
