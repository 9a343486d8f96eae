#pragma once
// One race lane's set-up: a method combo and, folded under it, the lane's target, its drafter and its options
// (key=value). Everything is generated from the method registry and prefilled, as placeholders, with what the
// lane would run with if left alone (resolved through AppSettings::resolve: Settings, then the family
// manifest), so eagle2 | medusa | streaming needs no typing: streaming's target placeholder already reads
// assets/models/streaming. A field the user fills becomes one of the lane's own keys, which win over both.
#include <QWidget>

#include "runs/lane_resolver.h"
#include "ui/engine/app_settings.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QToolButton;
class QFormLayout;

namespace specscope::ui {

class LaneEditor : public QWidget {
  Q_OBJECT
 public:
  explicit LaneEditor(QWidget* parent = nullptr);
  void setSettings(const AppSettings& settings);  // refreshes the placeholders
  QString method() const;
  void setMethod(const QString& method);
  // The lane as typed: the method and the fields the user filled (model, draft or head, options).
  runs::LaneRequest request() const;
  void setRequest(const runs::LaneRequest& request);
  // A recorded lane, restored field by field (replay), so running it again runs the same thing.
  void setLane(const runs::Lane& lane);
  void setDetailsVisible(bool visible);
  void setBusy(bool busy);

 signals:
  void changed();

 private:
  void refresh();  // placeholders, drafter row and the one-line summary for the current method
  QComboBox* method_;
  QToolButton* more_;
  QLabel* summary_;
  QWidget* details_;
  QFormLayout* form_;
  QLineEdit *target_, *drafter_, *options_;
  AppSettings settings_;
};

}  // namespace specscope::ui
