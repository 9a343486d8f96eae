#include "ui/inspector/why_panel.h"

#include <QGridLayout>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/inspector/tree_inspector_widget.h"
#include "ui/inspector/tree_layout.h"

namespace specscope::ui {

// Horizontal probability bars: a token, a bar as long as its probability, the number. The marked bar (the node's own
// token, or the token drawn) is drawn in the highlight colour.
class WhyBars : public QWidget {
 public:
  explicit WhyBars(QWidget* parent = nullptr) : QWidget(parent) {}
  void setBars(std::vector<sessions::WhyBar> bars) {
    bars_ = std::move(bars);
    setFixedHeight(int(bars_.size()) * kRow + 2);
    setVisible(!bars_.empty());
    update();
  }
  const std::vector<sessions::WhyBar>& bars() const { return bars_; }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    const QPalette& pal = palette();
    const int label_w = std::min(110, width() / 3), num_w = 62;
    const int bar_w = std::max(10, width() - label_w - num_w - 8);
    for (size_t i = 0; i < bars_.size(); ++i) {
      const auto& b = bars_[i];
      const int y = int(i) * kRow + 1;
      p.setPen(pal.color(QPalette::WindowText));
      const QString label = QString::fromStdString(b.text);
      p.drawText(QRect(0, y, label_w - 4, kRow), Qt::AlignVCenter | Qt::AlignRight,
                 p.fontMetrics().elidedText(label, Qt::ElideRight, label_w - 4));
      const QColor fill = b.marked ? pal.color(QPalette::Highlight) : pal.color(QPalette::Mid);
      p.fillRect(QRect(label_w, y + 3, std::max(1, int(bar_w * std::clamp(b.p, 0.0, 1.0))), kRow - 6), fill);
      p.drawText(QRect(label_w + bar_w + 6, y, num_w, kRow), Qt::AlignVCenter | Qt::AlignLeft,
                 QString::fromStdString(sessions::format_prob(b.p)));
    }
  }

 private:
  static constexpr int kRow = 18;
  std::vector<sessions::WhyBar> bars_;
};

namespace {
QLabel* wrapped(QWidget* parent, const char* name) {
  auto* l = new QLabel(parent);
  l->setObjectName(name);
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  l->setTextFormat(Qt::PlainText);
  return l;
}
std::string show_token(std::string_view t) { return "\xE2\x80\x9C" + display_token(t, 24) + "\xE2\x80\x9D"; }
}  // namespace

WhyPanel::WhyPanel(QWidget* parent) : QWidget(parent) {
  setMinimumWidth(260);  // the rows and bars need it; the tree beside it keeps the rest
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  outer->addWidget(scroll);
  auto* body = new QWidget;
  scroll->setWidget(body);
  auto* v = new QVBoxLayout(body);
  v->setContentsMargins(8, 6, 8, 6);
  hint_ = wrapped(body, "whyHint");
  hint_->setText(tr("Click a draft node in the tree to see the verification step that decided it."));
  title_ = wrapped(body, "whyTitle");
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  rule_ = wrapped(body, "whyRule");
  rows_box_ = new QWidget(body);
  rows_ = new QGridLayout(rows_box_);
  rows_->setContentsMargins(0, 0, 0, 0);
  rows_->setHorizontalSpacing(12);
  verdict_ = wrapped(body, "whyVerdict");
  top_title_ = wrapped(body, "whyTopKTitle");
  top_ = new WhyBars(body);
  residual_title_ = wrapped(body, "whyResidualTitle");
  residual_ = new WhyBars(body);
  missing_ = wrapped(body, "whyMissing");
  QFont italic = missing_->font();
  italic.setItalic(true);
  missing_->setFont(italic);
  for (QWidget* w : std::initializer_list<QWidget*>{hint_, title_, rule_, rows_box_, verdict_, top_title_, top_,
                                                    residual_title_, residual_, missing_})
    v->addWidget(w);
  v->addStretch(1);
  showNode(nullptr, -1);
}

void WhyPanel::attach(TreeInspectorWidget* tree) {
  tree_ = tree;
  auto refresh = [this] { showNode(tree_->currentRecord(), tree_->selectedNode()); };
  connect(tree, &TreeInspectorWidget::nodeSelected, this, refresh);
  connect(tree, &TreeInspectorWidget::currentStepChanged, this, refresh);
}

void WhyPanel::showNode(const StepRecord* step, int node) {
  content_ = step && node >= 0 ? sessions::explain_node(*step, node, show_token) : sessions::WhyPanel{};
  const bool any = !content_.title.empty();
  hint_->setVisible(!any);
  auto set = [](QLabel* l, const std::string& text) {
    l->setText(QString::fromStdString(text));
    l->setVisible(!text.empty());
  };
  set(title_, content_.title);
  set(rule_, content_.rule);
  set(verdict_, content_.verdict);
  set(top_title_, content_.top_k.empty() ? std::string() : content_.top_k_title);
  set(residual_title_, content_.residual.empty() ? std::string() : content_.residual_title);
  set(missing_, content_.missing);
  top_->setBars(content_.top_k);
  residual_->setBars(content_.residual);
  while (QLayoutItem* item = rows_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  int r = 0;
  for (const auto& row : content_.rows) {
    auto* k = new QLabel(QString::fromStdString(row.label), rows_box_);
    k->setForegroundRole(QPalette::PlaceholderText);
    auto* val = new QLabel(QString::fromStdString(row.value), rows_box_);
    val->setObjectName(QString::fromStdString("why_" + row.key));
    val->setTextInteractionFlags(Qt::TextSelectableByMouse);
    rows_->addWidget(k, r, 0);
    rows_->addWidget(val, r++, 1);
  }
  rows_box_->setVisible(r > 0);
}

QString WhyPanel::plainText() const {
  QStringList out;
  for (const QLabel* l : {hint_, title_, rule_})
    if (l->isVisibleTo(this)) out << l->text();
  for (int i = 0; i < rows_->count(); i += 2) {
    const auto* k = qobject_cast<QLabel*>(rows_->itemAt(i)->widget());
    const auto* val = qobject_cast<QLabel*>(rows_->itemAt(i + 1)->widget());
    if (k && val) out << k->text() + ": " + val->text();
  }
  for (const QLabel* l : {verdict_, top_title_})
    if (l->isVisibleTo(this)) out << l->text();
  for (const auto& b : top_->bars()) out << QString::fromStdString(b.text + " " + sessions::format_prob(b.p));
  if (residual_title_->isVisibleTo(this)) out << residual_title_->text();
  for (const auto& b : residual_->bars()) out << QString::fromStdString(b.text + " " + sessions::format_prob(b.p));
  if (missing_->isVisibleTo(this)) out << missing_->text();
  return out.join('\n');
}

}  // namespace specscope::ui
