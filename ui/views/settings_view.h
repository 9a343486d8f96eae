#pragma once
// Settings: the target and its family's drafter paths (file dialogs; prefilled from the family manifest), the
// chat's method and its parameters (hints and placeholders from the method registry), sampling, backend, the
// session database; remembered with QSettings.
#include <QWidget>
#include <map>
#include <memory>

#include "ui/engine/app_settings.h"

namespace specscope::ui {

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

 signals:
  void changed();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace specscope::ui
