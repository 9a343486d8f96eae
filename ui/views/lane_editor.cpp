#include "ui/views/lane_editor.h"

#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QToolButton>
#include <QVBoxLayout>
#include <utility>

#include "engine/model/family_manifest.h"
#include "engine/util/error.h"
#include "ui/views/method_hints.h"

namespace specscope::ui {

namespace {

QString short_name(const std::string& path) {
  const QFileInfo f(QString::fromStdString(path));
  return f.fileName().isEmpty() ? f.filePath() : f.fileName();
}

bool drafter_row(MethodNeed need) { return need != MethodNeed::Nothing && need != MethodNeed::StreamingTarget; }

QLineEdit* small_edit() {
  auto* e = new QLineEdit;
  e->setClearButtonEnabled(true);
  e->setMinimumWidth(40);  // lanes share the width equally: let fields shrink
  return e;
}

}  // namespace

LaneEditor::LaneEditor(QWidget* parent) : QWidget(parent) {
  auto* root = new QVBoxLayout(this);
  root->setContentsMargins(0, 0, 0, 0);
  root->setSpacing(2);
  auto* row = new QHBoxLayout;
  method_ = new QComboBox;
  method_->setObjectName("laneMethod");
  for (const auto& m : method_registry()) {
    method_->addItem(QString::fromStdString(m.name));
    method_->setItemData(method_->count() - 1, QString::fromStdString(m.title), Qt::ToolTipRole);
  }
  method_->setMinimumContentsLength(8);
  method_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  more_ = new QToolButton;
  more_->setArrowType(Qt::RightArrow);
  more_->setCheckable(true);
  more_->setAutoRaise(true);
  more_->setToolTip(tr("Show this lane's target, drafter and options"));
  row->addWidget(method_, 1);
  row->addWidget(more_);
  root->addLayout(row);
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setTextFormat(Qt::PlainText);
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  root->addWidget(summary_);

  details_ = new QWidget;
  form_ = new QFormLayout(details_);
  form_->setContentsMargins(0, 0, 0, 0);
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  target_ = small_edit();
  drafter_ = small_edit();
  options_ = small_edit();
  target_->setToolTip(tr("The target this lane verifies with (empty: Settings' target, or the family's own "
                         "target for methods that need one)"));
  form_->addRow(tr("target"), target_);
  form_->addRow(tr("drafter"), drafter_);
  form_->addRow(tr("options"), options_);
  details_->setVisible(false);
  root->addWidget(details_);

  connect(more_, &QToolButton::toggled, this, &LaneEditor::setDetailsVisible);
  connect(method_, &QComboBox::currentTextChanged, this, [this] {
    refresh();
    emit changed();
  });
  for (QLineEdit* e : {target_, drafter_, options_})
    connect(e, &QLineEdit::editingFinished, this, [this] {
      refresh();
      emit changed();
    });
  refresh();
}

void LaneEditor::setSettings(const AppSettings& settings) {
  settings_ = settings;
  refresh();
}

QString LaneEditor::method() const { return method_->currentText(); }
void LaneEditor::setMethod(const QString& method) { method_->setCurrentText(method); }

void LaneEditor::setDetailsVisible(bool visible) {
  more_->blockSignals(true);
  more_->setChecked(visible);
  more_->blockSignals(false);
  more_->setArrowType(visible ? Qt::DownArrow : Qt::RightArrow);
  details_->setVisible(visible);
}

void LaneEditor::setBusy(bool busy) {
  for (QWidget* w : std::initializer_list<QWidget*>{method_, target_, drafter_, options_}) w->setEnabled(!busy);
}

runs::LaneRequest LaneEditor::request() const {
  runs::LaneRequest r;
  r.method = method().toStdString();
  const MethodInfo* info = find_method_info(r.method);
  if (!target_->text().trimmed().isEmpty()) r.keys["model"] = target_->text().trimmed().toStdString();
  if (info && drafter_row(info->needs) && !drafter_->text().trimmed().isEmpty())
    r.keys[need_key(info->needs)] = drafter_->text().trimmed().toStdString();
  for (const auto& [k, v] : options_from_text(options_->text())) r.keys[k] = v;
  // As the CLI's --lane would read it, for messages that name the lane.
  r.text = r.method;
  std::string sep = ":";
  for (const auto& [k, v] : r.keys) r.text += std::exchange(sep, ",") + k + "=" + v;
  return r;
}

void LaneEditor::setRequest(const runs::LaneRequest& r) {
  method_->setCurrentText(QString::fromStdString(r.method));
  const MethodInfo* info = find_method_info(r.method);
  const std::string dkey = info ? need_key(info->needs) : "";
  std::map<std::string, std::string> options;
  target_->clear();
  drafter_->clear();
  for (const auto& [k, v] : r.keys) {
    if (k == "model") target_->setText(QString::fromStdString(v));
    else if (k == "draft" || k == "head") drafter_->setText(QString::fromStdString(v));
    else options[k] = v;
  }
  options_->setText(options_to_text(options));
  refresh();
}

void LaneEditor::setLane(const runs::Lane& lane) {
  // Only what differs from what the lane would get anyway becomes a key: labels stay short, and a later
  // change in Settings still reaches the fields that were defaults.
  runs::LaneRequest r{lane.method.name, {}, lane.method.name};
  runs::Lane would;
  try {
    would = settings_.resolve_one(lane.method.name);
  } catch (const InputError&) {
  }
  if (!lane.target.empty() && (would.target.empty() || !same_path(would.target, lane.target))) r.keys["model"] = lane.target;
  const MethodInfo* info = find_method_info(lane.method.name);
  if (info && drafter_row(info->needs)) {
    const bool draft = info->needs == MethodNeed::DraftModel;
    const std::string& had = draft ? lane.method.draft_path : lane.method.head_path;
    const std::string& gets = draft ? would.method.draft_path : would.method.head_path;
    if (!had.empty() && (gets.empty() || !same_path(had, gets))) r.keys[draft ? "draft" : "head"] = had;
  }
  for (const auto& [k, v] : lane.method.options)
    if (auto it = would.method.options.find(k); it == would.method.options.end() || it->second != v) r.keys[k] = v;
  setRequest(r);
}

void LaneEditor::refresh() {
  const std::string m = method().toStdString();
  const MethodInfo* info = find_method_info(m);
  if (!info) return;
  // What the lane runs with when its fields are left empty (placeholders), and with them as typed (summary).
  runs::Lane fallback, lane;
  QString problem;
  try {
    fallback = settings_.resolve_one(m);
  } catch (const std::exception&) {
  }
  try {
    lane = settings_.resolve({request()}).front();
  } catch (const std::exception& e) {
    problem = QString::fromStdString(e.what());
  }
  target_->setPlaceholderText(QString::fromStdString(fallback.target));
  const bool has_drafter = drafter_row(info->needs);
  form_->setRowVisible(drafter_, has_drafter);
  if (auto* label = qobject_cast<QLabel*>(form_->labelForField(drafter_)))
    label->setText(QString::fromLatin1(need_key(info->needs)));
  const std::string drafter_default =
      info->needs == MethodNeed::DraftModel ? fallback.method.draft_path : fallback.method.head_path;
  drafter_->setPlaceholderText(has_drafter ? QString::fromStdString(drafter_default) : QString());
  drafter_->setToolTip(QString::fromLatin1(need_description(info->needs)));
  // The registry's published defaults, with what Settings and the family set for this method on top.
  QString shown = defaults_placeholder(*info);
  if (!fallback.method.options.empty()) shown = options_to_text(fallback.method.options) + " · " + shown;
  options_->setPlaceholderText(shown);
  options_->setToolTip(options_tooltip(*info));
  options_->setEnabled(!info->options.empty() && method_->isEnabled());

  if (!problem.isEmpty()) {
    summary_->setText(problem);
    summary_->setStyleSheet("color: #d55e00;");  // Okabe-Ito vermillion, as the statistics view's warnings
    return;
  }
  summary_->setStyleSheet(QString());
  QString s = tr("on %1").arg(short_name(lane.target));
  const std::string drafter = info->needs == MethodNeed::DraftModel ? lane.method.draft_path : lane.method.head_path;
  if (has_drafter && !drafter.empty()) s += QString(" · %1 %2").arg(need_key(info->needs), short_name(drafter));
  if (!options_->text().trimmed().isEmpty()) s += " · " + options_->text().trimmed();
  summary_->setText(s);
  summary_->setToolTip(QString::fromStdString(lane.target + (drafter.empty() ? "" : "\n" + drafter)));
}

}  // namespace specscope::ui
