#include "ui/views/token_text_view.h"

#include <QElapsedTimer>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QTimer>
#include <QScrollBar>
#include <QTextCursor>
#include <QToolTip>

#include "ui/views/provenance.h"

namespace specscope::ui {

TokenTextView::TokenTextView(QWidget* parent) : QTextBrowser(parent) {
  setReadOnly(true);
  setOpenLinks(false);
  setMouseTracking(true);
  flush_timer_ = new QTimer(this);
  flush_timer_->setSingleShot(true);
  connect(flush_timer_, &QTimer::timeout, this, &TokenTextView::flush);
  since_flush_.start();
}

void TokenTextView::flush() {
  flush_timer_->stop();
  since_flush_.restart();
  if (pending_.empty()) return;
  const bool at_bottom = verticalScrollBar()->value() >= verticalScrollBar()->maximum() - 4;
  auto steps = std::move(pending_);
  pending_.clear();
  for (auto& [step, piece] : steps) insert_step(step, piece);
  if (at_bottom) verticalScrollBar()->setValue(verticalScrollBar()->maximum());
}

void TokenTextView::insert(const QString& text, const QColor& background, const QString& tooltip) {
  QTextCursor c(document());
  c.movePosition(QTextCursor::End);
  QTextCharFormat f;
  if (background.isValid()) f.setBackground(background);
  if (!tooltip.isEmpty()) f.setToolTip(tooltip);
  c.insertText(text, f);
}

void TokenTextView::appendPlain(const QString& text, bool bold) {
  flush();  // keep the order of what was appended
  QTextCursor c(document());
  c.movePosition(QTextCursor::End);
  QTextCharFormat f;
  if (bold) f.setFontWeight(QFont::Bold);
  c.insertText(text, f);
}

QTextCharFormat TokenTextView::noteFormat() const {
  QTextCharFormat f;
  f.setFontItalic(true);
  f.setForeground(palette().color(QPalette::PlaceholderText));
  return f;
}

void TokenTextView::appendNote(const QString& text) {
  flush();
  QTextCursor c(document());
  c.movePosition(QTextCursor::End);
  c.insertText(text, noteFormat());
}

int TokenTextView::stepAt(int pos) const {
  for (size_t i = 0; i < ranges_.size(); ++i)
    if (pos >= ranges_[i].first && pos < ranges_[i].second) return int(i);
  return -1;
}

void TokenTextView::mouseReleaseEvent(QMouseEvent* e) {
  QTextBrowser::mouseReleaseEvent(e);
  if (e->button() != Qt::LeftButton || textCursor().hasSelection()) return;  // a drag selects text instead
  flush();
  // cursorForPosition gives the nearest gap between characters; a click on a token's last half-character may
  // land on the next step's first gap, which is close enough for picking a step.
  const int step = stepAt(cursorForPosition(e->position().toPoint()).position());
  if (step >= 0) emit stepClicked(step);
}

void TokenTextView::clearGenerated() {
  flush();
  generated_.clear();
  ranges_.clear();
  highlighted_ = -1;
  setExtraSelections({});
}

void TokenTextView::highlightStep(int step) {
  flush();
  highlighted_ = step;
  if (step < 0 || step >= int(ranges_.size())) {
    setExtraSelections({});
    return;
  }
  QTextEdit::ExtraSelection sel;
  sel.cursor = QTextCursor(document());
  sel.cursor.setPosition(ranges_[size_t(step)].first);
  sel.cursor.setPosition(ranges_[size_t(step)].second, QTextCursor::KeepAnchor);
  // The selection colours for as long as the cursor is there: the provenance colours stay in the tooltips.
  sel.format.setBackground(palette().color(QPalette::Highlight));
  sel.format.setForeground(palette().color(QPalette::HighlightedText));
  setExtraSelections({sel});
  QTextCursor c(document());
  c.setPosition(ranges_[size_t(step)].first);
  const QRect r = cursorRect(c);
  if (r.top() < 0 || r.bottom() > viewport()->height())
    verticalScrollBar()->setValue(verticalScrollBar()->value() + r.top() - viewport()->height() / 3);
}

void TokenTextView::appendStep(const StepRecord& s, const QString& piece) {
  generated_ += piece;
  pending_.emplace_back(s, piece);
  constexpr qint64 kInterval = 50;  // ms: at most 20 insertions a second (the main window batches at 15 Hz)
  const qint64 since = since_flush_.elapsed();
  if (since >= kInterval) flush();
  else if (!flush_timer_->isActive()) flush_timer_->start(int(kInterval - since));
}

void TokenTextView::insert_step(const StepRecord& s, const QString& piece) {
  QTextCursor end(document());
  end.movePosition(QTextCursor::End);
  const int begin = end.position();
  insert_tokens(s, piece);
  end.movePosition(QTextCursor::End);
  ranges_.emplace_back(begin, end.position());
}

void TokenTextView::insert_tokens(const StepRecord& s, const QString& piece) {
  // Token texts of what this step committed: accepted drafts, then the bonus.
  std::string joined;
  std::vector<std::pair<std::string, int>> tokens;  // text, node id (-1: bonus)
  for (size_t i = 0; i < s.committed.size(); ++i) {
    if (i < s.accepted_path.size()) {
      const auto& n = s.nodes.at(size_t(s.accepted_path[i]));
      tokens.emplace_back(n.text, n.id);
    } else {
      tokens.emplace_back(s.bonus_text, -1);
    }
    joined += tokens.back().first;
  }
  if (QString::fromStdString(joined) == piece) {
    for (auto& [text, id] : tokens) {
      const QColor bg = id >= 0 ? accepted_color(s.nodes[size_t(id)].depth, dark_)
                                : (s.accepted_path.empty() && s.nodes.empty() ? QColor() : bonus_color(dark_));
      insert(QString::fromStdString(text), bg, provenance_tooltip(s, id));
    }
  } else if (!piece.isEmpty()) {
    insert(piece, s.accepted_path.empty() ? QColor() : accepted_color(1, dark_), provenance_tooltip(s, -1));
  }
}

bool TokenTextView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    QTextCursor c = cursorForPosition(viewport()->mapFromGlobal(he->globalPos()));
    // The format at a position describes the character before it; look one ahead too.
    QString tip = c.charFormat().toolTip();
    if (tip.isEmpty() && !c.atEnd()) {
      c.movePosition(QTextCursor::NextCharacter);
      tip = c.charFormat().toolTip();
    }
    if (tip.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(he->globalPos(), tip, this);
    return true;
  }
  return QTextBrowser::event(e);
}

}  // namespace specscope::ui
