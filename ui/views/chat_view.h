#pragma once
// The chat: a conversation through the model's chat template. The answer streams in with every token
// coloured by provenance; Send (Ctrl+Return), Stop (Esc), Regenerate, Edit last message and resend, New chat.
// The view owns the conversation; the main window turns a send into a runs::Job.
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
  void answerFinished(const QString& full_text, bool cancelled);
  void setBusy(bool busy);

  void setInput(const QString& text);
  void send();                           // what the Send button does
  void newChat();
  void showConversation(const std::vector<ChatMessage>& messages);  // replay: earlier turns, no colours
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

 private:
  void rebuild();  // redraws the transcript from the conversation (after regenerate/edit)
  struct Widgets;
  std::unique_ptr<Widgets> w_;
  std::vector<ChatMessage> conversation_;
  qint64 session_id_ = 0;
  bool busy_ = false;
};

}  // namespace specscope::ui
