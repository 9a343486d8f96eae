#include "ui/views/model_picker.h"

#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QThreadPool>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <iterator>
#include <optional>
#include <spdlog/spdlog.h>

#include "engine/discovery/discovery.h"
#include "engine/discovery/memory_estimate.h"
#include "engine/discovery/model_listing.h"
#include "engine/model/default_model.h"
#include "engine/model/family_manifest.h"
#include "engine/util/error.h"

namespace specscope::ui {

namespace {

using discovery::ListedModel;
using discovery::ModelGroup;

// "Loads" last: the last column takes the width that is left.
enum Column { kName, kWhat, kParameters, kDtype, kSize, kMemory, kDrafters, kLoads, kColumns };

// The drafter roles, in the order the form shows them.
struct Role {
  MethodNeed need;
  const char* label;
  const char* object_name;
};
const Role kRoles[] = {{MethodNeed::EagleHead, "EAGLE-1/2 head", "drafterEagle"},
                       {MethodNeed::Eagle3Head, "EAGLE-3 head", "drafterEagle3"},
                       {MethodNeed::MedusaHeads, "Medusa heads", "drafterMedusa"},
                       {MethodNeed::DraftModel, "Draft model (sps)", "drafterDraft"}};

QString q(const std::string& s) { return QString::fromStdString(s); }

QString drafter_summary(const ListedModel& m) {
  QStringList methods;
  for (const auto& d : m.drafters)
    for (const auto& method : d.methods)
      if (!methods.contains(q(method))) methods << q(method);
  return methods.join(", ");
}

struct Listing {
  std::vector<ModelGroup> groups;
  int problems = 0;
  std::string roots;  // where was looked, for the empty case
};

// Off the UI thread: reads every store's manifests and headers.
Listing list_everything() {
  Listing out;
  std::string base;
  try {
    base = default_model_path();
  } catch (const InputError&) {  // an installation without the shipped family: the stores alone
  }
  const discovery::StoreRoots roots = discovery::StoreRoots::from_environment();
  const discovery::Discovery d = discovery::discover(roots);
  out.groups = discovery::list_models(d, base, discovery::mem_available_bytes());
  out.problems = int(d.problems.size());
  for (const auto& p : d.problems) spdlog::info("model picker: {}", p.line());
  for (const auto* list : {&roots.ollama, &roots.lmstudio, &roots.hf})
    for (const auto& r : *list) out.roots += (out.roots.empty() ? "" : ", ") + r;
  return out;
}

}  // namespace

struct ModelPicker::State {
  QString current;
  QLineEdit* search;
  QLabel *status, *details;
  QTreeWidget* tree;
  QComboBox* drafters[4];
  QPushButton* use;
  std::optional<Listing> listing;
  const ListedModel* selected = nullptr;
  ModelChoice file_choice;  // set by Open file… / Open folder…
};

ModelPicker::ModelPicker(const QString& current_target, QWidget* parent) : QDialog(parent), s_(std::make_unique<State>()) {
  setObjectName("modelPicker");
  setWindowTitle(tr("Open model"));
  resize(1100, 640);
  s_->current = current_target;
  auto* root = new QVBoxLayout(this);

  auto* top = new QHBoxLayout;
  s_->search = new QLineEdit;
  s_->search->setObjectName("modelSearch");
  s_->search->setPlaceholderText(tr("Search by name, architecture or type (e.g. \"qwen q8\")"));
  s_->search->setClearButtonEnabled(true);
  top->addWidget(s_->search, 1);
  root->addLayout(top);
  s_->status = new QLabel(tr("Searching the model stores…"));
  s_->status->setObjectName("modelPickerStatus");
  root->addWidget(s_->status);

  s_->tree = new QTreeWidget;
  s_->tree->setObjectName("modelTree");
  s_->tree->setColumnCount(kColumns);
  s_->tree->setHeaderLabels({tr("Name"), tr("Architecture"), tr("Parameters"), tr("Type"), tr("Size"), tr("Memory"),
                             tr("Drafters"), tr("Loads")});
  s_->tree->setRootIsDecorated(true);
  s_->tree->setUniformRowHeights(true);
  s_->tree->header()->setStretchLastSection(true);
  root->addWidget(s_->tree, 1);

  s_->details = new QLabel;
  s_->details->setObjectName("modelDetails");
  s_->details->setWordWrap(true);
  s_->details->setTextInteractionFlags(Qt::TextSelectableByMouse);
  root->addWidget(s_->details);
  auto* form = new QFormLayout;
  for (size_t i = 0; i < std::size(kRoles); ++i) {
    s_->drafters[i] = new QComboBox;
    s_->drafters[i]->setObjectName(kRoles[i].object_name);
    s_->drafters[i]->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    form->addRow(tr(kRoles[i].label), s_->drafters[i]);
  }
  root->addLayout(form);

  auto* buttons = new QHBoxLayout;
  auto* open_file = new QPushButton(tr("Open file…"));
  open_file->setObjectName("openModelFile");
  auto* open_folder = new QPushButton(tr("Open folder…"));
  open_folder->setObjectName("openModelFolder");
  auto* cancel = new QPushButton(tr("Cancel"));
  s_->use = new QPushButton(tr("Use this model"));
  s_->use->setObjectName("useModel");
  s_->use->setDefault(true);
  s_->use->setEnabled(false);
  buttons->addWidget(open_file);
  buttons->addWidget(open_folder);
  buttons->addStretch(1);
  buttons->addWidget(cancel);
  buttons->addWidget(s_->use);
  root->addLayout(buttons);

  connect(s_->search, &QLineEdit::textChanged, this, [this] { show_rows(); });
  connect(s_->tree, &QTreeWidget::currentItemChanged, this, [this] { row_selected(); });
  connect(s_->tree, &QTreeWidget::itemDoubleClicked, this, [this] {
    if (s_->use->isEnabled()) s_->use->click();
  });
  connect(cancel, &QPushButton::clicked, this, &QDialog::reject);
  connect(s_->use, &QPushButton::clicked, this, [this] {
    if (!s_->selected || !s_->selected->choosable) return;
    s_->file_choice = {};
    emit chosen(choice());
    accept();
  });
  connect(open_file, &QPushButton::clicked, this, [this] {
    choose_path(QFileDialog::getOpenFileName(this, tr("Choose a GGUF model"), s_->current, tr("GGUF models (*.gguf)")));
  });
  connect(open_folder, &QPushButton::clicked, this, [this] {
    choose_path(QFileDialog::getExistingDirectory(this, tr("Choose a model folder"), s_->current));
  });

  // Discovery on the pool; the result comes back through the event loop to this dialog, if it is still open.
  QPointer<ModelPicker> self(this);
  QThreadPool::globalInstance()->start([self]() mutable {
    auto listing = std::make_shared<Listing>();
    try {
      *listing = list_everything();
    } catch (const std::exception& e) {  // discovery reports broken stores as problems; this is anything else
      spdlog::warn("model picker: {}", e.what());
    }
    QMetaObject::invokeMethod(
        qApp,
        [self = std::move(self), listing] {
          if (!self) return;
          self->s_->listing = std::move(*listing);
          self->show_rows();
          emit self->listed();
        },
        Qt::QueuedConnection);
  });
}

ModelPicker::~ModelPicker() = default;

bool ModelPicker::searching() const { return !s_->listing; }

void ModelPicker::show_rows() {
  if (!s_->listing) return;
  const std::string query = s_->search->text().toStdString();
  const QString keep = s_->selected ? q(s_->selected->path) : s_->current;
  s_->tree->clear();
  s_->selected = nullptr;
  int shown = 0, total = 0;
  QTreeWidgetItem* to_select = nullptr;
  for (const ModelGroup& g : s_->listing->groups) {
    auto* group = new QTreeWidgetItem(s_->tree);
    group->setFlags(Qt::ItemIsEnabled);
    QFont bold = group->font(kName);
    bold.setBold(true);
    group->setFont(kName, bold);
    int in_group = 0;
    for (const ListedModel& m : g.models) {
      ++total;
      if (!discovery::matches_query(m, query)) continue;
      ++in_group;
      auto* item = new QTreeWidgetItem(group);
      item->setText(kName, q(m.name));
      item->setToolTip(kName, q(m.spec.empty() ? m.path : m.spec + "\n" + m.path));
      item->setText(kWhat, q(m.what));
      item->setText(kParameters, q(m.parameters));
      item->setText(kDtype, q(m.dtype));
      item->setText(kSize, q(m.size));
      item->setText(kMemory, m.memory.empty() ? QString() : q(m.memory).section(' ', 1, 2));  // "1.4 GiB"
      item->setToolTip(kMemory, q(m.memory));
      item->setText(kLoads, m.choosable ? tr("yes") : tr("no"));  // why: the tooltip, and below when selected
      item->setToolTip(kLoads, m.choosable ? tr("Can be the target") : q(m.why_not));
      item->setText(kDrafters, drafter_summary(m));
      item->setData(kName, Qt::UserRole, QVariant::fromValue(quintptr(&m)));
      for (int c : {int(kSize), int(kParameters), int(kMemory)}) item->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
      if (!m.choosable)
        for (int c = 0; c < kColumns; ++c) item->setForeground(c, palette().brush(QPalette::Disabled, QPalette::Text));
      if (!to_select && m.choosable && !keep.isEmpty() && same_path(m.path, keep.toStdString())) to_select = item;
    }
    shown += in_group;
    group->setText(kName, QString("%1 (%2)").arg(q(g.title)).arg(in_group));
    group->setHidden(in_group == 0);
    group->setExpanded(true);
  }
  for (int c = 0; c + 1 < kColumns; ++c) s_->tree->resizeColumnToContents(c);
  if (total == 0)
    s_->status->setText(tr("No models found (looked in %1). Open a file or folder instead.").arg(q(s_->listing->roots)));
  else if (query.empty())
    s_->status->setText(tr("%1 models%2").arg(total).arg(s_->listing->problems
                                                              ? tr("; %1 broken store entries left out (see the log)").arg(s_->listing->problems)
                                                              : QString()));
  else
    s_->status->setText(tr("%1 of %2 models match \"%3\"").arg(shown).arg(total).arg(s_->search->text()));
  if (to_select) s_->tree->setCurrentItem(to_select);
  row_selected();
}

void ModelPicker::row_selected() {
  const QTreeWidgetItem* item = s_->tree->currentItem();
  const QVariant v = item ? item->data(kName, Qt::UserRole) : QVariant();
  s_->selected = v.isValid() ? reinterpret_cast<const ListedModel*>(v.value<quintptr>()) : nullptr;
  const ListedModel* m = s_->selected;
  for (size_t i = 0; i < std::size(kRoles); ++i) {
    QComboBox* box = s_->drafters[i];
    box->clear();
    const auto offered = m ? m->drafters_for(kRoles[i].need) : std::vector<const discovery::ListedDrafter*>{};
    for (const auto* d : offered) {
      QStringList methods;
      for (const auto& method : d->methods) methods << q(method);
      box->addItem(tr("%1 (%2; %3)").arg(q(d->name), methods.join(", "), q(d->basis)), q(d->path));
    }
    box->addItem(tr("none"), QString());
    box->setEnabled(!offered.empty());
  }
  s_->use->setEnabled(m && m->choosable);
  if (!m) {
    s_->details->setText(QString());
    return;
  }
  QString text = q(m->spec.empty() ? m->path : m->spec + " · " + m->path);
  if (!m->memory.empty()) text += "\n" + tr("Memory: %1").arg(q(m->memory));
  if (!m->choosable) text += "\n" + tr("Cannot be the target: %1").arg(q(m->why_not));
  else if (m->drafters.empty()) text += "\n" + tr("No drafter found for it: vanilla, pld and lookahead run on it alone.");
  s_->details->setText(text);
}

ModelChoice ModelPicker::choice() const {
  if (!s_->file_choice.target.isEmpty()) return s_->file_choice;
  ModelChoice c;
  const ListedModel* m = s_->selected;
  if (!m) return c;
  c.target = q(m->path);
  c.name = q(m->spec.empty() ? m->name : m->spec);
  c.drafters_chosen = true;
  QString* field[] = {&c.eagle_head, &c.eagle3_head, &c.medusa_head, &c.draft};
  for (size_t i = 0; i < std::size(kRoles); ++i) *field[i] = s_->drafters[i]->currentData().toString();
  return c;
}

bool ModelPicker::selectModel(const QString& name) {
  for (QTreeWidgetItemIterator it(s_->tree); *it; ++it) {
    const QVariant v = (*it)->data(kName, Qt::UserRole);
    if (!v.isValid()) continue;
    const auto* m = reinterpret_cast<const ListedModel*>(v.value<quintptr>());
    if (q(m->name) == name || q(m->spec) == name) {
      s_->tree->setCurrentItem(*it);
      return true;
    }
  }
  return false;
}

void ModelPicker::choose_path(const QString& path) {
  if (path.isEmpty()) return;
  s_->file_choice = ModelChoice{path, path, false, {}, {}, {}, {}};
  emit chosen(s_->file_choice);
  accept();
}

}  // namespace specscope::ui
