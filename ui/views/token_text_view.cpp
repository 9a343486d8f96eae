#include "ui/views/token_text_view.h"

#include <QElapsedTimer>
#include <algorithm>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QTimer>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextCursor>
#include <QToolTip>
#include <utility>

#include "ui/views/provenance.h"

namespace specscope::ui {

namespace {

// What coloured a run of text, kept in its character format so a theme change can recolour it later.
constexpr int kKindProperty = QTextFormat::UserProperty + 1;
constexpr int kPlain = 0, kBonus = 7, kNote = 8;  // 1-6: an accepted draft token's depth

}  // namespace

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
  // One edit block for all of them: each token is its own insertion (its own colour and tooltip), and outside a
  // block every insertion lays the answer's paragraph out again, so a flush cost the square of the answer's length
  // in text shaping, on the GUI thread that shares this machine's two cores with the engine (perf on gui_bench:
  // QTextDocumentLayout::doLayout under insertText was the GUI thread's largest cost while a chat streamed).
  QTextCursor block(document());
  block.beginEditBlock();
  for (auto& [step, piece] : steps) insert_step(step, piece);
  block.endEditBlock();
  if (at_bottom) verticalScrollBar()->setValue(verticalScrollBar()->maximum());
}

QTextCharFormat TokenTextView::coloured(int kind) const {
  QTextCharFormat f;
  f.setProperty(kKindProperty, kind);
  if (kind == kNote) {
    f.setFontItalic(true);
    f.setForeground(palette().color(QPalette::PlaceholderText));
  } else if (kind != kPlain) {
    f.setBackground(kind == kBonus ? bonus_color(dark_) : accepted_color(kind, dark_));
    f.setForeground(token_text_color(dark_));
  }
  return f;
}

void TokenTextView::insert(const QString& text, int kind, const QString& tooltip) {
  QTextCursor c(document());
  c.movePosition(QTextCursor::End);
  QTextCharFormat f = coloured(kind);
  if (!tooltip.isEmpty()) f.setToolTip(tooltip);
  if (reasoning_) f.setFontItalic(true);
  c.insertText(text, f);
}

void TokenTextView::setReplyShape(const ReplyShape& shape) {
  flush();  // steps that came before belong to the reply before
  if (shape.format == ReplyFormat::Plain) reply_.reset();
  else reply_.emplace(shape);
  shown_part_.reset();
}

void TokenTextView::insert_part_note(ReplyPart part) {
  if (reply_part_needs_note(shown_part_, part)) {
    const bool was = std::exchange(reasoning_, false);
    insert((shown_part_ ? "\n" : "") + (part == ReplyPart::Reasoning ? tr("thinking: ") : tr("answer: ")), kNote, {});
    reasoning_ = was;
  }
  shown_part_ = part;
}

void TokenTextView::insert_reply_text(const QString& text, int kind, const QString& tooltip) {
  if (!reply_) {
    insert(text, kind, tooltip);
    return;
  }
  insert_spans(reply_->feed(text.toStdString()), kind, tooltip);
}

void TokenTextView::insert_spans(const std::vector<ReplySpan>& spans, int kind, const QString& tooltip) {
  for (const ReplySpan& span : spans) {
    insert_part_note(span.part);
    reasoning_ = span.part == ReplyPart::Reasoning;
    insert(QString::fromStdString(span.text), kind, tooltip);
    reasoning_ = false;
  }
}

void TokenTextView::finishReply() {
  flush();
  if (!reply_) return;
  const std::vector<ReplySpan> rest = reply_->flush();
  if (rest.empty()) return;
  QTextCursor block(document());
  block.beginEditBlock();
  insert_spans(rest, kPlain, {});
  block.endEditBlock();
  // The held-back text was the last step's.
  if (!ranges_.empty()) ranges_.back().second = document()->characterCount() - 1;
}

void TokenTextView::appendReasoning(const QString& text) {
  flush();
  shown_part_.reset();  // a stored answer of its own: its notes as a live reply's
  insert_spans({{ReplyPart::Reasoning, text.toStdString()}}, kPlain, {});
  insert_part_note(ReplyPart::Answer);
}

void TokenTextView::setDark(bool dark) {
  dark_ = dark;
  // Runs of coloured text first, then recoloured: changing formats while walking fragments would split them.
  struct Run {
    int begin, end, kind;
  };
  std::vector<Run> runs;
  for (QTextBlock b = document()->begin(); b.isValid(); b = b.next())
    for (auto it = b.begin(); !it.atEnd(); ++it) {
      const QTextFragment f = it.fragment();
      const int kind = f.charFormat().intProperty(kKindProperty);
      if (kind != kPlain) runs.push_back({f.position(), f.position() + f.length(), kind});
    }
  QTextCursor c(document());
  for (const Run& r : runs) {
    c.setPosition(r.begin);
    c.setPosition(r.end, QTextCursor::KeepAnchor);
    c.mergeCharFormat(coloured(r.kind));
  }
  if (highlighted_ >= 0) highlightStep(highlighted_);  // the race cursor's mark takes the new palette's colours
}

void TokenTextView::appendPlain(const QString& text, bool bold) {
  flush();  // keep the order of what was appended
  QTextCursor c(document());
  c.movePosition(QTextCursor::End);
  QTextCharFormat f;
  if (bold) f.setFontWeight(QFont::Bold);
  c.insertText(text, f);
}

QTextCharFormat TokenTextView::noteFormat() const { return coloured(kNote); }

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
  reply_.reset();
  shown_part_.reset();
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
  // At most 20 insertions a second (a replay at full speed sends a step per event), and the steps handed over
  // together (the main window's 15 Hz text clock sends several at once) inserted together, once control is
  // back in the event loop: inserting the first at once would hold the rest back a whole interval.
  constexpr qint64 kInterval = 50;
  if (!flush_timer_->isActive()) flush_timer_->start(int(std::max<qint64>(0, kInterval - since_flush_.elapsed())));
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
  const std::vector<CommittedText> tokens = committed_texts(s);
  std::string joined;
  for (const auto& t : tokens) joined += t.text;
  if (QString::fromStdString(joined) == piece) {
    for (const auto& [text, id] : tokens) {
      const int kind = id >= 0 ? std::clamp(s.nodes[size_t(id)].depth, 1, 6)
                               : (s.accepted_path.empty() && s.nodes.empty() ? kPlain : kBonus);
      insert_reply_text(QString::fromStdString(text), kind, provenance_tooltip(s, id));
    }
  } else if (!piece.isEmpty()) {
    insert_reply_text(piece, s.accepted_path.empty() ? kPlain : 1, provenance_tooltip(s, -1));
  }
}

void TokenTextView::paintEvent(QPaintEvent* e) {
  QTextBrowser::paintEvent(e);
  // The revision only moves while undo is on; the length moves with every insertion.
  const std::pair<int, int> state{document()->revision(), document()->characterCount()};
  if (state == drawn_state_) return;
  drawn_state_ = state;
  emit textStateDrawn(++states_drawn_);
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
