#pragma once
// Settings: the target and its family's drafter paths (file dialogs; prefilled from the family manifest), the
// chat's method and its parameters (hints and placeholders from the method registry), sampling, backend, the
// session database; remembered with QSettings.
#include <QWidget>
#include <map>
#include <memory>

#include "ui/engine/app_settings.h"

namespace specscope::ui {

struct ModelChoice;

class SettingsView : public QWidget {
  Q_OBJECT
 public:
  explicit SettingsView(QWidget* parent = nullptr);
  ~SettingsView() override;
  AppSettings settings() const;
  void setSettings(const AppSettings& s);  // also updates the form
  void load();                             // from QSettings (defaults: the embedded model family)
  void save() const;
  static AppSettings defaults();
  // The model picker (ui/views/model_picker.h), window-modal over this window; a choice goes to chooseModel.
  void openModelPicker();
  // A new target (and its drafters, when chosen in the picker), applied as the file and folder dialogs apply
  // theirs, then changed().
  void chooseModel(const ModelChoice& choice);

 signals:
  void changed();

 private:
  // The target field set to `path`, with drafter paths that were the old family's following the new one's.
  void set_target(const QString& path);
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace specscope::ui
