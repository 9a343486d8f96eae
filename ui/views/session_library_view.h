#pragma once
// The library of recorded sessions: date, model, methods, prompt, tokens, tau, speedup; a search box
// filtering on any of them; delete (with confirmation); opening one emits openSession(id).
#include <QString>
#include <QWidget>
#include <memory>

namespace specscope::ui {

class SessionLibraryView : public QWidget {
  Q_OBJECT
 public:
  explicit SessionLibraryView(QWidget* parent = nullptr);
  ~SessionLibraryView() override;
  void setDatabase(const QString& path);  // reloads
  void refresh();                         // re-reads the store (after a run was recorded)
  int rowCount() const;                   // rows currently shown (after filtering)
  void setFilter(const QString& text);
  bool exportPng(const QString& path);

 signals:
  void openSession(qint64 id);
  void errorMessage(const QString& text);  // e.g. a store that cannot be read, for the status bar

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace specscope::ui
