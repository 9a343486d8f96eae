#pragma once
// Settings: model and head paths (file dialogs), the method and its parameters (the published defaults shown
// as placeholders), sampling, backend, the session database; remembered with QSettings.
#include <QWidget>
#include <map>
#include <memory>

#include "engine/methods/factory.h"
#include "engine/sampling/sampler.h"

namespace specscope::ui {

struct AppSettings {
  QString model_path, draft_path, eagle_head, eagle3_head, medusa_head;
  QString method = "sps";
  std::map<std::string, std::map<std::string, std::string>> method_options;  // per method name
  SamplingParams sampling;
  int max_tokens = 256;
  bool record = true;
  QString session_db;
  bool dark = false;
  QString backend = "auto";  // auto | cpu | cuda (engine/model/backend.h)
  // The MethodSpec for `method` with the paths and options above.
  MethodSpec spec_for(const std::string& method) const;
};

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
