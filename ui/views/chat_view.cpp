#include "ui/views/chat_view.h"

#include <QHBoxLayout>
#include <QKeySequence>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QShortcut>
#include <QVBoxLayout>

#include "ui/views/token_text_view.h"

namespace specscope::ui {

namespace {

// The messages a send asks the model about: Settings' system prompt (if any) first, then the conversation. Read
// from the stored settings (Settings saves on every change) so that the next message uses what is set now; the
// system message is not part of the transcript (conversation_), so the context-cut marker's indexes are unchanged.
std::vector<ChatMessage> with_system_prompt(const std::vector<ChatMessage>& conversation) {
  const QString system = QSettings().value("system_prompt").toString();
  if (system.isEmpty() || (!conversation.empty() && conversation.front().role == "system")) return conversation;
  std::vector<ChatMessage> out{{"system", system.toStdString()}};
  out.insert(out.end(), conversation.begin(), conversation.end());
  return out;
}

}  // namespace

struct ChatView::Widgets {
  TokenTextView* transcript;
  QPlainTextEdit* input;
  QPushButton *send, *stop, *regenerate, *edit, *fresh;
};

ChatView::ChatView(QWidget* parent) : QWidget(parent), w_(std::make_unique<Widgets>()) {
  auto* root = new QVBoxLayout(this);
  w_->transcript = new TokenTextView;
  w_->transcript->setObjectName("chatTranscript");
  root->addWidget(w_->transcript, 1);
  w_->input = new QPlainTextEdit;
  w_->input->setObjectName("chatInput");
  w_->input->setPlaceholderText(tr("Ask something… (Ctrl+Return sends)"));
  w_->input->setMaximumHeight(90);
  root->addWidget(w_->input);
  auto* buttons = new QHBoxLayout;
  w_->send = new QPushButton(tr("Send"));
  w_->stop = new QPushButton(tr("Stop"));
  w_->regenerate = new QPushButton(tr("Regenerate"));
  w_->edit = new QPushButton(tr("Edit last"));
  w_->fresh = new QPushButton(tr("New chat"));
  w_->send->setToolTip(tr("Ctrl+Return"));
  w_->stop->setToolTip(tr("Esc"));
  for (auto* b : {w_->send, w_->stop, w_->regenerate, w_->edit, w_->fresh}) buttons->addWidget(b);
  buttons->addStretch(1);
  root->addLayout(buttons);

  connect(w_->send, &QPushButton::clicked, this, &ChatView::send);
  connect(w_->stop, &QPushButton::clicked, this, &ChatView::stopRequested);
  connect(w_->fresh, &QPushButton::clicked, this, &ChatView::newChat);
  connect(w_->transcript, &TokenTextView::stepClicked, this, &ChatView::stepClicked);
  connect(w_->regenerate, &QPushButton::clicked, this, [this] {
    // Drop the last answer and ask again with the same conversation.
    if (busy_ || conversation_.empty()) return;
    if (conversation_.back().role == "assistant") conversation_.pop_back();
    rebuild();
    answerStarted();
    emit generateRequested(with_system_prompt(conversation_));
  });
  connect(w_->edit, &QPushButton::clicked, this, [this] {
    // Take the last user message back into the input box, dropping it and its answer.
    if (busy_) return;
    while (!conversation_.empty() && conversation_.back().role == "assistant") conversation_.pop_back();
    if (conversation_.empty()) return;
    w_->input->setPlainText(QString::fromStdString(conversation_.back().content));
    conversation_.pop_back();
    rebuild();
  });
  auto* sc = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), w_->input);
  connect(sc, &QShortcut::activated, this, &ChatView::send);
  setBusy(false);
}

ChatView::~ChatView() = default;

void ChatView::setBusy(bool busy) {
  busy_ = busy;
  w_->send->setEnabled(!busy);
  w_->regenerate->setEnabled(!busy);
  w_->edit->setEnabled(!busy);
  w_->fresh->setEnabled(!busy);
  w_->stop->setEnabled(busy);
}

void ChatView::setInput(const QString& text) { w_->input->setPlainText(text); }

void ChatView::send() {
  const QString text = w_->input->toPlainText().trimmed();
  if (busy_ || text.isEmpty()) return;
  conversation_.push_back({"user", text.toStdString()});
  w_->input->clear();
  starts_.push_back(header(tr("You: ")));
  w_->transcript->appendPlain(text);
  answerStarted();
  emit generateRequested(with_system_prompt(conversation_));
}

QTextCursor ChatView::header(const QString& who) {
  w_->transcript->flush();
  QTextCursor at(w_->transcript->document());
  at.movePosition(QTextCursor::End);
  at.setKeepPositionOnInsert(true);  // stays before what is written here (the header, a cut marker)
  w_->transcript->appendPlain((w_->transcript->document()->isEmpty() ? "" : "\n\n") + who, true);
  return at;
}

void ChatView::answerStarted() {
  answer_start_ = header(tr("Model: "));
  w_->transcript->clearGenerated();
  setBusy(true);
}

void ChatView::setReplyShape(const ReplyShape& shape) { w_->transcript->setReplyShape(shape); }

void ChatView::appendStep(const StepRecord& step, const QString& piece) { w_->transcript->appendStep(step, piece); }

void ChatView::answerFinished(const QString& full_text, bool cancelled, const QString& note) {
  w_->transcript->finishReply();
  // The answer as the template wants it back: its reasoning apart, harmony's markers out.
  const SplitReply reply = split_reply(full_text.toStdString(), w_->transcript->replyShape());
  conversation_.push_back({"assistant", reply.answer, reply.reasoning});
  starts_.push_back(answer_start_);
  if (!note.isEmpty()) w_->transcript->appendNote(" [" + note + "]");
  else if (cancelled) w_->transcript->appendNote(" " + tr("[stopped]"));
  setBusy(false);
}

void ChatView::answerFailed(const QString& message) {
  w_->transcript->appendNote(" [" + tr("error: %1").arg(message) + "]");
  setBusy(false);
}

void ChatView::markContextCut(int dropped, const QString& note) {
  cut_note_ = note;
  size_t system = 0;
  while (system < conversation_.size() && conversation_[system].role == "system") ++system;
  cut_ = int(system) + dropped;
  place_cut_marker();
}

void ChatView::place_cut_marker() {
  if (!marker_.isNull()) marker_.removeSelectedText();
  marker_ = QTextCursor();
  if (cut_ <= 0 || cut_ >= int(starts_.size())) return;
  // Inserted where message cut_ starts, before its "\n\nYou: ".
  const QString text = "\n\n── " + cut_note_ + tr(": the model no longer sees what is above") + " ──";
  const int begin = starts_[size_t(cut_)].position();
  QTextCursor c(w_->transcript->document());
  c.setPosition(begin);
  c.insertText(text, w_->transcript->noteFormat());
  marker_ = QTextCursor(w_->transcript->document());
  marker_.setPosition(begin);
  marker_.setPosition(begin + int(text.size()), QTextCursor::KeepAnchor);
}

void ChatView::newChat() {
  if (busy_) return;
  conversation_.clear();
  session_id_ = 0;
  cut_ = 0;
  starts_.clear();
  marker_ = QTextCursor();
  w_->transcript->clear();
  emit newChatStarted();
}

void ChatView::rebuild() {
  w_->transcript->clear();
  starts_.clear();
  marker_ = QTextCursor();
  for (auto& m : conversation_) {
    starts_.push_back(header(m.role == "user" ? tr("You: ") : tr("Model: ")));
    if (!m.reasoning.empty()) w_->transcript->appendReasoning(QString::fromStdString(m.reasoning));
    w_->transcript->appendPlain(QString::fromStdString(m.content));
  }
  place_cut_marker();
}

void ChatView::showConversation(const std::vector<ChatMessage>& messages) {
  conversation_ = messages;
  for (ChatMessage& m : conversation_) {
    if (m.role != "assistant" || !m.reasoning.empty()) continue;
    const ReplyShape shape = reply_shape_of_text(m.content);
    if (shape.format == ReplyFormat::Plain) continue;
    SplitReply reply = split_reply(m.content, shape);
    m.content = std::move(reply.answer);
    m.reasoning = std::move(reply.reasoning);
  }
  cut_ = 0;
  rebuild();
}

QString ChatView::transcriptText() const { return w_->transcript->toPlainText(); }
QString ChatView::lastAnswer() const { return w_->transcript->generatedText(); }
void ChatView::setDark(bool dark) { w_->transcript->setDark(dark); }

}  // namespace specscope::ui
