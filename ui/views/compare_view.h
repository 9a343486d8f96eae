#pragma once
// Compare: 2 to 4 lanes, one method each, on the same prompt and sampling settings. Each lane shows its text
// with provenance colours, its current tree in miniature, and live tau, tokens/s, target forwards and speedup
// vs the first lane; for greedy runs a verdict line says whether every output is identical. Lanes run
// interleaved (side by side) or one after another (clean timings); the view says which.
#include <QWidget>
#include <memory>
#include <vector>

#include "engine/methods/step_record.h"

namespace specscope::ui {

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  ~CompareView() override;

  std::vector<std::string> laneMethods() const;
  void setLaneMethods(const std::vector<std::string>& methods);  // 2..4
  QString prompt() const;
  void setPrompt(const QString& p);
  bool interleaved() const;
  void setInterleaved(bool on);

  void runStarted(bool greedy);
  void laneStep(int lane, const StepRecord& step, const QString& piece);
  void laneFinished(int lane, const RunSummary& summary, bool identical);
  void runFinished(bool cancelled);
  void setBusy(bool busy);
  void setDark(bool dark);

  QString verdict() const;
  QString laneText(int lane) const;
  QString markdownTable() const;  // the comparison table, for the clipboard or a file
  int laneNodesDrawn(int lane) const;

 signals:
  void runRequested();
  void stopRequested();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace specscope::ui
