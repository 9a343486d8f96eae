#pragma once
// Streaming text with every token coloured by provenance and a tooltip per token (step, depth, draft
// confidence, target probability). Used by the chat and by each compare lane.
#include <QElapsedTimer>
#include <QTextBrowser>
#include <QTimer>
#include <optional>
#include <utility>
#include <vector>

#include "engine/generate/reply_parts.h"
#include "engine/methods/step_record.h"

namespace specscope::ui {

class TokenTextView : public QTextBrowser {
  Q_OBJECT
 public:
  explicit TokenTextView(QWidget* parent = nullptr);
  // Also recolours the text already shown (its tints and their text colour, and the notes) for the theme.
  void setDark(bool dark);
  // The text a step made visible, split into its committed tokens when their texts add up to it (they do
  // unless a UTF-8 sequence or a stop string straddles steps; then the piece is coloured as a whole).
  // With a reasoning format set (setReplyShape), the steps' text is split as it comes: markers are taken out, the
  // reasoning is set in italics after a "thinking" note, the answer after an "answer" note; every token keeps its
  // provenance colour and tooltip.
  void appendStep(const StepRecord& step, const QString& piece);
  // How the reply that the next appendStep calls belong to marks its reasoning (reset by clearGenerated).
  void setReplyShape(const ReplyShape& shape);
  // The reply is complete: text held back as a possible marker is shown.
  void finishReply();
  ReplyShape replyShape() const { return reply_ ? reply_->shape() : ReplyShape{}; }  // setReplyShape's, until cleared
  void appendPlain(const QString& text, bool bold = false);
  void appendReasoning(const QString& text);  // a stored reply's reasoning: its note and italic text
  void appendNote(const QString& text);  // a remark of the app's, not the model's text: italic, dimmed
  // The format appendNote uses, for notes inserted elsewhere in the document (the chat's context-cut marker).
  QTextCharFormat noteFormat() const;
  QString generatedText() const { return generated_; }  // everything appendStep added since clearGenerated
  void clearGenerated();
  // Marks the text of step `step` (counted from the first appendStep since clearGenerated) and scrolls to it;
  // -1 removes the mark. The race cursor uses it to show which step produced the token under it.
  void highlightStep(int step);
  int highlightedStep() const { return highlighted_; }
  int stepAt(int document_position) const;  // the step whose text holds the position; -1 if none
  // Evidence for tests and benchmarks: how many different texts were painted (repainting the same text, for a
  // scroll or a tooltip, does not count). What a user sees stream, unlike what was inserted.
  int textStatesDrawn() const { return states_drawn_; }

 signals:
  // A click (not a selection) on a step's text: open that step (counted as for highlightStep) elsewhere.
  void stepClicked(int step);
  // A different text was painted (textStatesDrawn() went up).
  void textStateDrawn(int states);

 public:
  // Steps are inserted at most 20 times a second (a replay at full speed sends one per event; the main window
  // paces live steps itself, ui/main/live_pacer.h); flush() inserts what waits now.
  void flush();

 protected:
  bool event(QEvent* e) override;  // tooltips from the character format under the mouse
  void paintEvent(QPaintEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;

 private:
  // kind: what colours the text (kPlain: none, 1-6: an accepted draft's depth, kBonus), kept in its format.
  void insert(const QString& text, int kind, const QString& tooltip);
  QTextCharFormat coloured(int kind) const;  // the format a kind's colours give, in the current theme
  void insert_step(const StepRecord& step, const QString& piece);  // records the step's range
  void insert_tokens(const StepRecord& step, const QString& piece);
  // Inserts a token's (or a piece's) text through the reply splitter, if there is one.
  void insert_reply_text(const QString& text, int kind, const QString& tooltip);
  void insert_spans(const std::vector<ReplySpan>& spans, int kind, const QString& tooltip);
  void insert_part_note(ReplyPart part);  // "thinking" / "answer" where the reply's part changes
  bool dark_ = false;
  std::vector<std::pair<StepRecord, QString>> pending_;
  QTimer* flush_timer_ = nullptr;
  QElapsedTimer since_flush_;
  QString generated_;
  std::vector<std::pair<int, int>> ranges_;  // document [begin, end) of each inserted step
  int highlighted_ = -1;
  int states_drawn_ = 0;
  std::pair<int, int> drawn_state_{-1, -1};  // the document's revision and length when last painted
  std::optional<ReplySplitter> reply_;       // setReplyShape: the reply's reasoning format
  std::optional<ReplyPart> shown_part_;      // the part whose note was shown last
  bool reasoning_ = false;                   // insert(): set the text in italics
};

}  // namespace specscope::ui
