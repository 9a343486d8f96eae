#pragma once
// The model picker (File > Open model…, Settings' "Choose…"): every model the other local tools keep (Ollama, LM
// Studio, the Hugging Face cache) and the shipped family, grouped by where they are, with a search box; each with
// its architecture, size, memory estimate and whether it can be the target (why not, when not), and the drafters
// discovery paired with it, one choice per role. "Open file…" and "Open folder…" take anything else.
//
// The rows come from engine/discovery/model_listing.h (grouping, refusals, filtering); discovery runs on Qt's
// thread pool, so the dialog opens at once and says it is searching until the rows arrive.
#include <QDialog>
#include <QString>
#include <memory>

namespace specscope::ui {

// What the user chose: a target and, when chosen here, its drafters (empty: none for that role).
struct ModelChoice {
  QString target;
  QString name;  // what the status bar calls it while it loads
  bool drafters_chosen = false;  // false (a file or folder dialog): the target's family decides, as in Settings
  QString draft, eagle_head, eagle3_head, medusa_head;
};

class ModelPicker : public QDialog {
  Q_OBJECT
 public:
  explicit ModelPicker(const QString& current_target, QWidget* parent = nullptr);
  ~ModelPicker() override;
  ModelChoice choice() const;
  bool searching() const;
  // Selects the row whose name or spec is `name` (for tests and scripted screenshots); false when none is.
  bool selectModel(const QString& name);

 signals:
  void chosen(const specscope::ui::ModelChoice& choice);
  void listed();  // the rows arrived (discovery finished)

 private:
  struct State;
  std::unique_ptr<State> s_;
  void show_rows();        // the rows that match the search box, under their group titles
  void row_selected();     // details, drafter choices and the OK button for the selected row
  void choose_path(const QString& path);  // Open file… / Open folder…
};

}  // namespace specscope::ui
