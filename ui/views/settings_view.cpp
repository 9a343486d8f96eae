#include "ui/views/settings_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

#include "engine/model/default_model.h"
#include "engine/model/backend.h"
#include "engine/util/error.h"
#include "sessions/schema.h"
#include "ui/views/method_hints.h"
#include "ui/views/model_picker.h"

namespace specscope::ui {

struct SettingsView::State {
  QLineEdit *model, *draft, *eagle, *eagle3, *medusa, *streaming, *db, *options, *system_prompt, *template_kwargs;
  QComboBox *method, *backend;
  QDoubleSpinBox *temperature, *top_p, *min_p;
  QSpinBox *top_k, *seed, *max_tokens;
  QCheckBox *record, *dark;
  QLabel* defaults_hint;
  AppSettings current;
  bool updating = false;
};

SettingsView::SettingsView(QWidget* parent) : QWidget(parent), s_(std::make_unique<State>()) {
  auto* root = new QVBoxLayout(this);
  auto path_row = [&](QFormLayout* form, const QString& label, QLineEdit*& edit, bool dir) {
    auto* row = new QHBoxLayout;
    edit = new QLineEdit;
    auto* browse = new QPushButton(tr("Browse…"));
    row->addWidget(edit, 1);
    row->addWidget(browse);
    form->addRow(label, row);
    connect(browse, &QPushButton::clicked, this, [this, edit, dir] {
      QString p = dir ? QFileDialog::getExistingDirectory(this, tr("Choose a folder"), edit->text())
                      : QFileDialog::getSaveFileName(this, tr("Session database"), edit->text(), "SQLite (*.db)",
                                                     nullptr, QFileDialog::DontConfirmOverwrite);
      if (p.isEmpty()) return;
      if (edit != s_->model) return edit->setText(p);
      set_target(p);  // the target: its family's drafters follow, and it loads now
      if (!s_->updating) emit changed();
    });
    connect(edit, &QLineEdit::editingFinished, this, [this] {
      if (!s_->updating) emit changed();
    });
  };

  auto* models = new QGroupBox(tr("Model and drafters"));
  auto* mf = new QFormLayout(models);
  path_row(mf, tr("Target model (HF folder or .gguf)"), s_->model, true);
  {  // GGUF models are single files: a second button picks one (the folder dialog cannot); a third opens the model
     // picker (what Ollama, LM Studio and the Hugging Face cache hold, with their drafters)
    auto* gguf = new QPushButton(tr("GGUF file…"));
    auto* pick = new QPushButton(tr("Choose…"));
    pick->setObjectName("chooseModel");
    pick->setToolTip(tr("The models Ollama, LM Studio and the Hugging Face cache keep, with their drafters"));
    auto* row = qobject_cast<QHBoxLayout*>(mf->itemAt(mf->rowCount() - 1, QFormLayout::FieldRole)->layout());
    if (row) row->addWidget(gguf), row->addWidget(pick);
    connect(gguf, &QPushButton::clicked, this, [this] {
      const QString p = QFileDialog::getOpenFileName(this, tr("Choose a GGUF model"), s_->model->text(),
                                                     tr("GGUF models (*.gguf)"));
      if (!p.isEmpty()) {
        set_target(p);
        if (!s_->updating) emit changed();
      }
    });
    connect(pick, &QPushButton::clicked, this, &SettingsView::openModelPicker);
  }
  path_row(mf, tr("Draft model (sps)"), s_->draft, true);
  path_row(mf, tr("EAGLE-1/2 head"), s_->eagle, true);
  path_row(mf, tr("EAGLE-3 head"), s_->eagle3, true);
  path_row(mf, tr("Medusa heads"), s_->medusa, true);
  path_row(mf, tr("Streaming model (its own target)"), s_->streaming, true);
  s_->streaming->setToolTip(tr("Speculative Streaming verifies with a model fine-tuned for it: lanes and chats "
                               "using streaming run on this target instead of the one above"));
  // A new target brings its own family: drafter paths that were the old family's follow the new one's manifest;
  // paths the user chose stay.
  connect(s_->model, &QLineEdit::editingFinished, this, [this] { set_target(s_->model->text()); });
  root->addWidget(models);

  auto* method = new QGroupBox(tr("Method"));
  auto* df = new QFormLayout(method);
  s_->method = new QComboBox;
  for (auto& m : known_methods()) s_->method->addItem(QString::fromStdString(m));
  df->addRow(tr("Method"), s_->method);
  s_->options = new QLineEdit;
  df->addRow(tr("Parameters (key=value …)"), s_->options);
  s_->defaults_hint = new QLabel;
  s_->defaults_hint->setWordWrap(true);
  df->addRow(QString(), s_->defaults_hint);
  s_->system_prompt = new QLineEdit;
  s_->system_prompt->setObjectName("systemPrompt");
  s_->system_prompt->setPlaceholderText(tr("none (the model's chat template decides)"));
  s_->system_prompt->setToolTip(tr("A system message before every chat conversation, rendered by the model's own "
                                   "chat template (some templates, e.g. Gemma-2's, refuse one)"));
  df->addRow(tr("System prompt"), s_->system_prompt);
  s_->template_kwargs = new QLineEdit;
  s_->template_kwargs->setObjectName("templateKwargs");
  s_->template_kwargs->setPlaceholderText(tr("none, e.g. {\"enable_thinking\": false} for Qwen3"));
  s_->template_kwargs->setToolTip(tr("Variables for the model's own chat template, as a JSON object: what "
                                     "transformers' apply_chat_template takes as keyword arguments and llama.cpp "
                                     "as --chat-template-kwargs"));
  df->addRow(tr("Template variables"), s_->template_kwargs);
  root->addWidget(method);

  auto* sampling = new QGroupBox(tr("Sampling"));
  auto* sf = new QFormLayout(sampling);
  s_->temperature = new QDoubleSpinBox;
  s_->temperature->setRange(0, 5);
  s_->temperature->setSingleStep(0.1);
  s_->temperature->setSpecialValueText(tr("0 (greedy)"));
  s_->top_k = new QSpinBox;
  s_->top_k->setRange(0, 1000000);
  s_->top_k->setSpecialValueText(tr("off"));
  s_->top_p = new QDoubleSpinBox;
  s_->top_p->setRange(0.01, 1);
  s_->top_p->setSingleStep(0.05);
  s_->min_p = new QDoubleSpinBox;
  s_->min_p->setRange(0, 1);
  s_->min_p->setSingleStep(0.01);
  s_->seed = new QSpinBox;
  s_->seed->setRange(0, 2147483647);
  s_->max_tokens = new QSpinBox;
  s_->max_tokens->setRange(1, 8192);
  sf->addRow(tr("Temperature"), s_->temperature);
  sf->addRow(tr("Top-k"), s_->top_k);
  sf->addRow(tr("Top-p"), s_->top_p);
  sf->addRow(tr("Min-p"), s_->min_p);
  sf->addRow(tr("Seed"), s_->seed);
  sf->addRow(tr("Max new tokens"), s_->max_tokens);
  root->addWidget(sampling);

  auto* app = new QGroupBox(tr("Backend and sessions"));
  auto* af = new QFormLayout(app);
  s_->backend = new QComboBox;
  s_->backend->addItem(tr("Automatic (CUDA when a GPU is visible)"), "auto");
  s_->backend->addItem(tr("CPU"), "cpu");
  bool cuda_ok = false;
  try {
    cuda_ok = gpu_backend_built() && resolve_backend(Backend::Cuda) == Backend::Cuda;
  } catch (const InputError&) {
  }
  s_->backend->addItem(cuda_ok ? tr("CUDA") : gpu_backend_built() ? tr("CUDA (no device visible)")
                                                                     : tr("CUDA (not built into this copy)"),
                       "cuda");
  if (!cuda_ok) s_->backend->setItemData(2, 0, Qt::UserRole - 1);  // disabled
  af->addRow(tr("Backend"), s_->backend);
  connect(s_->backend, &QComboBox::currentIndexChanged, this, [this] {
    if (!s_->updating) emit changed();
  });
  s_->record = new QCheckBox(tr("Record every run"));
  af->addRow(QString(), s_->record);
  path_row(af, tr("Session database"), s_->db, false);
  s_->dark = new QCheckBox(tr("Dark theme"));
  af->addRow(QString(), s_->dark);
  root->addWidget(app);
  root->addStretch(1);

  auto update_hint = [this] {
    const std::string m = s_->method->currentText().toStdString();
    const MethodInfo* info = find_method_info(m);
    const QString defaults = info ? defaults_placeholder(*info) : QString();
    s_->defaults_hint->setText(!info ? QString()
                               : defaults.isEmpty() ? tr("%1. No parameters.").arg(QString::fromStdString(info->title))
                                                    : tr("%1. Published defaults: %2").arg(QString::fromStdString(info->title), defaults));
    s_->options->setPlaceholderText(defaults);
    s_->options->setToolTip(info ? options_tooltip(*info) : QString());
    s_->options->setText(options_to_text(s_->current.method_options[m]));
  };
  connect(s_->method, &QComboBox::currentTextChanged, this, [this, update_hint] {
    update_hint();
    if (!s_->updating) emit changed();
  });
  for (QLineEdit* e : {s_->system_prompt, s_->template_kwargs})
    connect(e, &QLineEdit::editingFinished, this, [this] {
      if (!s_->updating) emit changed();
    });
  connect(s_->options, &QLineEdit::editingFinished, this, [this] {
    s_->current.method_options[s_->method->currentText().toStdString()] =
        options_from_text(s_->options->text());
    if (!s_->updating) emit changed();
  });
  for (QWidget* w : std::initializer_list<QWidget*>{s_->temperature, s_->top_p, s_->min_p})
    connect(static_cast<QDoubleSpinBox*>(w), &QDoubleSpinBox::valueChanged, this, [this] {
      if (!s_->updating) emit changed();
    });
  for (QSpinBox* w : {s_->top_k, s_->seed, s_->max_tokens})
    connect(w, &QSpinBox::valueChanged, this, [this] {
      if (!s_->updating) emit changed();
    });
  for (QCheckBox* w : {s_->record, s_->dark})
    connect(w, &QCheckBox::toggled, this, [this] {
      if (!s_->updating) emit changed();
    });
  setSettings(defaults());
}

SettingsView::~SettingsView() = default;

void SettingsView::set_target(const QString& path) {
  s_->model->setText(path);
  const std::string now = path.toStdString();
  if (now == s_->current.model_path.toStdString()) return;
  const FamilyPaths before = FamilyPaths::for_target(s_->current.model_path.toStdString());
  const FamilyPaths after = FamilyPaths::for_target(now);
  auto follow = [](QLineEdit* e, const QString& old_default, const QString& new_default) {
    if (e->text().isEmpty() || e->text() == old_default) e->setText(new_default);
  };
  follow(s_->draft, before.draft, after.draft);
  follow(s_->eagle, before.eagle_head, after.eagle_head);
  follow(s_->eagle3, before.eagle3_head, after.eagle3_head);
  follow(s_->medusa, before.medusa_head, after.medusa_head);
  follow(s_->streaming, before.streaming, after.streaming);
  s_->current.model_path = path;
}

void SettingsView::openModelPicker() {
  auto* picker = new ModelPicker(s_->model->text(), window());
  picker->setAttribute(Qt::WA_DeleteOnClose);
  connect(picker, &ModelPicker::chosen, this, &SettingsView::chooseModel);
  picker->open();
}

void SettingsView::chooseModel(const ModelChoice& c) {
  if (c.target.isEmpty()) return;
  set_target(c.target);
  if (c.drafters_chosen) {  // what the picker offered and the user kept (empty: none for that role)
    s_->draft->setText(c.draft);
    s_->eagle->setText(c.eagle_head);
    s_->eagle3->setText(c.eagle3_head);
    s_->medusa->setText(c.medusa_head);
  }
  if (!s_->updating) emit changed();
}

AppSettings SettingsView::defaults() {
  AppSettings a;
  const std::string base = default_model_path();
  a.model_path = QString::fromStdString(base);
  const FamilyPaths f = FamilyPaths::for_target(base);
  a.draft_path = f.draft;
  a.eagle_head = f.eagle_head;
  a.eagle3_head = f.eagle3_head;
  a.medusa_head = f.medusa_head;
  a.streaming_path = f.streaming;
  // EAGLE-2's dynamic trees are what the inspector is for; fall back to the draft model, then to n-grams.
  a.method = !a.eagle_head.isEmpty() ? "eagle2" : !a.draft_path.isEmpty() ? "sps" : "pld";
  a.session_db = QString::fromStdString(sessions::default_session_db_path());
  return a;
}

AppSettings SettingsView::settings() const {
  AppSettings a = s_->current;
  a.model_path = s_->model->text();
  a.draft_path = s_->draft->text();
  a.eagle_head = s_->eagle->text();
  a.eagle3_head = s_->eagle3->text();
  a.medusa_head = s_->medusa->text();
  a.streaming_path = s_->streaming->text();
  a.method = s_->method->currentText();
  a.method_options[a.method.toStdString()] = options_from_text(s_->options->text());
  a.sampling.temperature = float(s_->temperature->value());
  a.sampling.top_k = s_->top_k->value();
  a.sampling.top_p = float(s_->top_p->value());
  a.sampling.min_p = float(s_->min_p->value());
  a.sampling.seed = uint64_t(s_->seed->value());
  a.max_tokens = s_->max_tokens->value();
  a.system_prompt = s_->system_prompt->text();
  a.template_kwargs = s_->template_kwargs->text();
  a.record = s_->record->isChecked();
  a.session_db = s_->db->text();
  a.dark = s_->dark->isChecked();
  a.backend = s_->backend->currentData().toString();
  return a;
}

void SettingsView::setSettings(const AppSettings& a) {
  s_->updating = true;
  s_->current = a;
  s_->model->setText(a.model_path);
  s_->draft->setText(a.draft_path);
  s_->eagle->setText(a.eagle_head);
  s_->eagle3->setText(a.eagle3_head);
  s_->medusa->setText(a.medusa_head);
  s_->streaming->setText(a.streaming_path);
  s_->method->setCurrentText(a.method);
  auto it = a.method_options.find(a.method.toStdString());
  s_->options->setText(it == a.method_options.end() ? QString() : options_to_text(it->second));
  s_->temperature->setValue(a.sampling.temperature);
  s_->top_k->setValue(a.sampling.top_k);
  s_->top_p->setValue(a.sampling.top_p);
  s_->min_p->setValue(a.sampling.min_p);
  s_->seed->setValue(int(a.sampling.seed));
  s_->max_tokens->setValue(a.max_tokens);
  s_->system_prompt->setText(a.system_prompt);
  s_->template_kwargs->setText(a.template_kwargs);
  s_->record->setChecked(a.record);
  s_->db->setText(a.session_db);
  s_->dark->setChecked(a.dark);
  s_->backend->setCurrentIndex(std::max(0, s_->backend->findData(a.backend)));
  s_->updating = false;
}

void SettingsView::load() {
  QSettings q;
  AppSettings a = defaults();
  auto str = [&](const char* key, QString& v) { v = q.value(key, v).toString(); };
  str("model", a.model_path);
  str("draft", a.draft_path);
  str("eagle", a.eagle_head);
  str("eagle3", a.eagle3_head);
  str("medusa", a.medusa_head);
  str("streaming", a.streaming_path);
  str("method", a.method);
  str("session_db", a.session_db);
  str("backend", a.backend);
  str("system_prompt", a.system_prompt);
  str("template_kwargs", a.template_kwargs);
  a.sampling.temperature = q.value("temperature", a.sampling.temperature).toFloat();
  a.sampling.top_k = q.value("top_k", a.sampling.top_k).toInt();
  a.sampling.top_p = q.value("top_p", a.sampling.top_p).toFloat();
  a.sampling.min_p = q.value("min_p", a.sampling.min_p).toFloat();
  a.sampling.seed = q.value("seed", qulonglong(a.sampling.seed)).toULongLong();
  a.max_tokens = q.value("max_tokens", a.max_tokens).toInt();
  a.record = q.value("record", a.record).toBool();
  a.dark = q.value("dark", a.dark).toBool();
  q.beginGroup("method_options");
  for (const QString& m : q.childKeys()) a.method_options[m.toStdString()] = options_from_text(q.value(m).toString());
  q.endGroup();
  setSettings(a);
}

void SettingsView::save() const {
  QSettings q;
  const AppSettings a = settings();
  q.setValue("model", a.model_path);
  q.setValue("draft", a.draft_path);
  q.setValue("eagle", a.eagle_head);
  q.setValue("eagle3", a.eagle3_head);
  q.setValue("medusa", a.medusa_head);
  q.setValue("streaming", a.streaming_path);
  q.setValue("method", a.method);
  q.setValue("session_db", a.session_db);
  q.setValue("backend", a.backend);
  q.setValue("system_prompt", a.system_prompt);
  q.setValue("template_kwargs", a.template_kwargs);
  q.setValue("temperature", a.sampling.temperature);
  q.setValue("top_k", a.sampling.top_k);
  q.setValue("top_p", a.sampling.top_p);
  q.setValue("min_p", a.sampling.min_p);
  q.setValue("seed", qulonglong(a.sampling.seed));
  q.setValue("max_tokens", a.max_tokens);
  q.setValue("record", a.record);
  q.setValue("dark", a.dark);
  q.beginGroup("method_options");
  for (auto& [m, o] : a.method_options) q.setValue(QString::fromStdString(m), options_to_text(o));
  q.endGroup();
}

}  // namespace specscope::ui
