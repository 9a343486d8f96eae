#pragma once
// The library of recorded sessions: date, model, methods, prompt, tokens, tau, speedup; a search box
// filtering on any of them; delete (with confirmation); opening one emits openSession(id). A store deleted or
// replaced by another file since it was listed is noticed on refresh, when the tab is shown and before Open or
// Delete acts on a row: one line says so and the rows are read again, so no stale row is opened or deleted.
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

 protected:
  void showEvent(QShowEvent* e) override;

 private:
  bool store_changed() const;  // since the rows were read
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace specscope::ui
