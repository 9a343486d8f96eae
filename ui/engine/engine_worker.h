#pragma once
// The engine on a worker thread. The UI posts a GenerationJob; the worker loads the model (cached by path,
// with progress), runs one lane (chat) or 2-4 lanes (compare) and reports every step through queued signals,
// so the UI thread never blocks. cancel() takes effect within one step. Lanes of a comparison run either
// interleaved — one step of each in turn, on their own threads but never at the same time, so they progress
// side by side without sharing cores — or one after another, for clean timings.
#include <QObject>
#include <QString>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/backend.h"
#include "engine/generate/generator.h"
#include "engine/methods/factory.h"
#include "engine/methods/step_record.h"
#include "engine/tokenizer/chat_template.h"

namespace specscope {
class Model;
}

namespace specscope::ui {

struct GenerationJob {
  QString model_path;
  std::vector<ChatMessage> conversation;  // ends with the user's message; rendered by the chat template
  bool chat = true;                       // false: conversation[0].content is a raw prompt
  GenerateOptions options;
  std::vector<MethodSpec> lanes;          // one (chat) or several (compare, the first is the reference)
  bool interleaved = true;
  bool record = true;
  QString session_db;
  QString kind = "chat";   // chat | compare
  QString title;
  qint64 session_id = 0;   // continue this session (a chat's next turn); 0: a new one
  Backend backend = Backend::Auto;
};

class EngineWorker : public QObject {
  Q_OBJECT
 public:
  EngineWorker();
  ~EngineWorker() override;
  void cancel() { cancel_.store(true); }  // thread-safe
  static void register_types();           // qRegisterMetaType for the signal arguments, once

 public slots:
  void loadModel(const QString& path);
  void run(const specscope::ui::GenerationJob& job);

 signals:
  void modelLoading(const QString& path);
  void modelLoaded(const QString& path, const QString& description);
  void laneStarted(int lane, const QString& method);
  void stepReady(int lane, const specscope::StepRecord& step, const QString& piece);
  void laneFinished(int lane, const specscope::RunSummary& summary, const QString& text, bool identical);
  void jobFinished(qint64 session_id, bool cancelled);
  void failed(const QString& message);
  void recordingFailed(const QString& message);

 private:
  std::shared_ptr<const Model> model_for(const QString& path);
  std::atomic<bool> cancel_{false};
  std::shared_ptr<const Model> model_;
  QString model_path_;
};

}  // namespace specscope::ui
