#pragma once
// The chat: a conversation through the model's chat template. The answer streams in with every token
// coloured by provenance; Send (Ctrl+Return), Stop (Esc), Regenerate, Edit last message and resend, New chat.
// A reasoning model's thinking is shown apart from its answer (reply_parts.h) and passed back to the template as
// the answer's reasoning, not as its content.
// The view owns the conversation; the main window turns a send into a runs::Job.
#include <QTextCursor>
#include <QWidget>
#include <memory>
#include <vector>

#include "engine/methods/step_record.h"
#include "engine/tokenizer/chat_template.h"

namespace specscope::ui {

class TokenTextView;

class ChatView : public QWidget {
  Q_OBJECT
 public:
  explicit ChatView(QWidget* parent = nullptr);
  ~ChatView() override;

  // Generation life cycle, driven by the main window.
  void answerStarted();
  void appendStep(const StepRecord& step, const QString& piece);
  // How the answer being generated marks its reasoning (after answerStarted, before its steps).
  void setReplyShape(const ReplyShape& shape);
  // `note`, when given, ends the answer in the transcript instead of "[stopped]" (e.g. "context full").
  void answerFinished(const QString& full_text, bool cancelled, const QString& note = {});
  // The answer could not be made: the error goes into the transcript, the question stays in the conversation
  // (Regenerate asks again, Edit last takes it back), and the chat is usable at once.
  void answerFailed(const QString& message);
  // The runner left out the oldest `dropped` messages (after any system prompt) to fit the context: a marker
  // goes where history was cut (moved there from where an earlier cut put it).
  void markContextCut(int dropped, const QString& note);
  QString cutMarkerText() const { return marker_.isNull() ? QString() : marker_.selectedText(); }
  void setBusy(bool busy);
  bool busy() const { return busy_; }

  void setInput(const QString& text);
  void send();                           // what the Send button does
  void newChat();
  // Replay: earlier turns, no colours. Stored answers are split into reasoning and answer by their markers.
  void showConversation(const std::vector<ChatMessage>& messages);
  const std::vector<ChatMessage>& conversation() const { return conversation_; }
  QString transcriptText() const;
  QString lastAnswer() const;
  void setDark(bool dark);
  qint64 sessionId() const { return session_id_; }
  void setSessionId(qint64 id) { session_id_ = id; }

 signals:
  void generateRequested(const std::vector<specscope::ChatMessage>& conversation);
  void stopRequested();
  void newChatStarted();
  void stepClicked(int step);  // a token of the answer being shown was clicked: its step (0: the prefill)

 private:
  void rebuild();  // redraws the transcript from the conversation (after regenerate/edit)
  QTextCursor header(const QString& who);  // writes "You: " / "Model: "; returns where the message starts
  void place_cut_marker();
  std::vector<QTextCursor> starts_;  // where each message of conversation_ starts in the transcript
  QTextCursor answer_start_;         // the answer being generated (not yet in conversation_)
  QTextCursor marker_;               // the context-cut marker's text, selected; null when there is none
  int cut_ = 0;                      // the first message the model still sees
  QString cut_note_;
  struct Widgets;
  std::unique_ptr<Widgets> w_;
  std::vector<ChatMessage> conversation_;
  qint64 session_id_ = 0;
  bool busy_ = false;
};

}  // namespace specscope::ui
