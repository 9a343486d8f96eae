#include "ui/views/session_library_view.h"

#include <QDateTime>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPixmap>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>
#include <cmath>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>

#include "engine/util/error.h"
#include "sessions/reader.h"
#include "sessions/store_identity.h"

namespace specscope::ui {

namespace {

enum Column { kId, kDate, kKind, kModel, kMethods, kPrompt, kTokens, kTau, kSpeedup, kSteps, kColumns };

constexpr int kSortRole = Qt::UserRole + 1;    // numbers sort as numbers
constexpr int kFilterRole = Qt::UserRole + 2;  // the full text the search box matches (the prompt unelided)
constexpr int kIdRole = Qt::UserRole + 3;

// Matches rows holding every whitespace-separated term of the search, each in any column (case-insensitive).
class LibraryFilter : public QSortFilterProxyModel {
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;
  void setTerms(const QString& text) {
    terms_ = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    invalidateFilter();
  }

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
    if (terms_.isEmpty()) return true;
    QString haystack;
    for (int c = 0; c < sourceModel()->columnCount(parent); ++c)
      haystack += sourceModel()->index(row, c, parent).data(kFilterRole).toString() + QLatin1Char('\n');
    for (const QString& t : terms_)
      if (!haystack.contains(t, Qt::CaseInsensitive)) return false;
    return true;
  }

 private:
  QStringList terms_;
};

QString elide(const std::string& text, int max_chars) {
  QString s = QString::fromStdString(text).simplified();  // newlines and runs of spaces to one space
  if (s.size() > max_chars) s = s.left(max_chars - 1).trimmed() + QChar(0x2026);
  return s;
}

QString model_name(const std::string& path) {
  QString p = QString::fromStdString(path);
  while (p.size() > 1 && (p.endsWith(QLatin1Char('/')) || p.endsWith(QLatin1Char('\\')))) p.chop(1);
  const QString name = QFileInfo(p).fileName();
  return name.isEmpty() ? p : name;
}

QStandardItem* text_item(const QString& shown, const QString& filter_text, const QVariant& sort) {
  auto* item = new QStandardItem(shown);
  item->setEditable(false);
  item->setData(filter_text, kFilterRole);
  item->setData(sort, kSortRole);
  return item;
}

QStandardItem* text_item(const QString& shown) { return text_item(shown, shown, shown.toLower()); }

QStandardItem* number_item(double value, const QString& shown) {
  auto* item = text_item(shown, shown, value);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

QStandardItem* blank_number_item() {
  // Unknown numbers (a run still recording, no vanilla to compare with) sort below every known one.
  auto* item = text_item(QString(), QString(), -std::numeric_limits<double>::infinity());
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

}  // namespace

struct SessionLibraryView::State {
  QString db_path;
  QLineEdit* search = nullptr;
  QTableView* table = nullptr;
  QStandardItemModel* model = nullptr;
  LibraryFilter* proxy = nullptr;
  QPushButton* open = nullptr;
  QPushButton* remove = nullptr;
  QPushButton* reload = nullptr;
  QLabel* status = nullptr;
  QString error;  // the last load's, shown under the table
  // The file the rows were read from (nullopt: there was none), and what changed about it at the last refresh.
  std::optional<sessions::StoreIdentity> listed;
  QString listed_path;
  QString notice;
  std::function<void()> update_buttons, update_status;

  // The selected session's id, or -1.
  qint64 selected_id() const {
    const QModelIndexList rows = table->selectionModel() ? table->selectionModel()->selectedRows() : QModelIndexList{};
    if (rows.isEmpty()) return -1;
    return rows.first().data(kIdRole).toLongLong();
  }
  QString selected_title() const {
    const QModelIndexList rows = table->selectionModel()->selectedRows();
    if (rows.isEmpty()) return {};
    return rows.first().siblingAtColumn(kPrompt).data(kFilterRole).toString();
  }
};

SessionLibraryView::SessionLibraryView(QWidget* parent) : QWidget(parent), s_(std::make_unique<State>()) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);

  auto* top = new QHBoxLayout;
  s_->search = new QLineEdit(this);
  s_->search->setPlaceholderText(tr("Search sessions: method, model, prompt, date…"));
  s_->search->setClearButtonEnabled(true);
  top->addWidget(s_->search, 1);
  s_->open = new QPushButton(tr("Open"), this);
  s_->remove = new QPushButton(tr("Delete…"), this);
  s_->reload = new QPushButton(tr("Refresh"), this);
  s_->open->setToolTip(tr("Open the selected session (or double-click it)"));
  s_->remove->setToolTip(tr("Delete the selected session and all its runs from the store"));
  top->addWidget(s_->open);
  top->addWidget(s_->remove);
  top->addWidget(s_->reload);
  layout->addLayout(top);

  s_->model = new QStandardItemModel(0, kColumns, this);
  s_->model->setHorizontalHeaderLabels({tr("ID"), tr("Date"), tr("Kind"), tr("Model"), tr("Methods"), tr("Prompt"),
                                        tr("Tokens"), tr("τ"), tr("Speedup"), tr("Steps")});
  s_->model->horizontalHeaderItem(kTau)->setToolTip(tr("Tokens per target forward of the first speculative run"));
  s_->model->horizontalHeaderItem(kSpeedup)->setToolTip(tr("Best speedup over vanilla among the session's runs"));
  s_->model->horizontalHeaderItem(kTokens)->setToolTip(tr("New tokens generated, over all runs"));
  s_->model->horizontalHeaderItem(kSteps)->setToolTip(tr("Recorded steps, over all runs"));
  s_->proxy = new LibraryFilter(this);
  s_->proxy->setSourceModel(s_->model);
  s_->proxy->setSortRole(kSortRole);
  s_->proxy->setFilterRole(kFilterRole);

  s_->table = new QTableView(this);
  s_->table->setModel(s_->proxy);
  s_->table->setSortingEnabled(true);
  s_->table->setSelectionBehavior(QAbstractItemView::SelectRows);
  s_->table->setSelectionMode(QAbstractItemView::SingleSelection);
  s_->table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  s_->table->setAlternatingRowColors(true);
  s_->table->setWordWrap(false);
  s_->table->setTextElideMode(Qt::ElideRight);
  s_->table->verticalHeader()->setVisible(false);
  s_->table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  auto* header = s_->table->horizontalHeader();
  header->setSectionResizeMode(QHeaderView::ResizeToContents);
  header->setSectionResizeMode(kPrompt, QHeaderView::Stretch);
  header->setHighlightSections(false);
  // Qt's header draws Descending as an upward arrow (QStyleOptionHeader::SortUp), which reads as "ascending";
  // the sorted column's title carries the arrow instead: ▼ largest first (newest first for ID), ▲ smallest.
  header->setSortIndicatorShown(false);
  const auto mark_sorted = [this](int column, Qt::SortOrder order) {
    for (int c = 0; c < kColumns; ++c) {
      QStandardItem* item = s_->model->horizontalHeaderItem(c);
      QString title = item->text();
      if (title.endsWith(QString(" ") + QChar(0x25B2)) || title.endsWith(QString(" ") + QChar(0x25BC))) title.chop(2);
      if (c == column) title += QString(" ") + QChar(order == Qt::DescendingOrder ? 0x25BC : 0x25B2);
      item->setText(title);
    }
  };
  connect(header, &QHeaderView::sortIndicatorChanged, this, mark_sorted);
  s_->table->sortByColumn(kId, Qt::DescendingOrder);  // newest first
  mark_sorted(kId, Qt::DescendingOrder);  // the indicator may have been there already (no change signal)
  layout->addWidget(s_->table, 1);

  s_->status = new QLabel(this);
  s_->status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(s_->status);

  s_->update_buttons = [this] {
    const bool any = s_->selected_id() >= 0;
    s_->open->setEnabled(any);
    s_->remove->setEnabled(any);
  };
  s_->update_status = [this] {
    if (!s_->notice.isEmpty()) {
      s_->status->setText(s_->notice);
      return;
    }
    if (!s_->error.isEmpty()) {
      s_->status->setText(tr("Cannot read the session store: %1").arg(s_->error));
      return;
    }
    const int total = s_->model->rowCount(), shown = s_->proxy->rowCount();
    if (s_->db_path.isEmpty()) s_->status->setText(tr("No session store"));
    else if (total == 0) s_->status->setText(tr("No recorded sessions in %1").arg(s_->db_path));
    else if (shown == total) s_->status->setText(tr("%n session(s) in %1", nullptr, total).arg(s_->db_path));
    else s_->status->setText(tr("%1 of %2 sessions shown").arg(shown).arg(total));
  };
  connect(s_->search, &QLineEdit::textChanged, this, [this](const QString& text) {
    s_->proxy->setTerms(text);
    s_->update_status();
    s_->update_buttons();
  });
  connect(s_->table->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] { s_->update_buttons(); });
  // A row's id means a session of the file it was read from: in another file it is another session, or none.
  connect(s_->table, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    if (store_changed()) return refresh();
    if (index.isValid()) emit openSession(index.siblingAtColumn(kId).data(kIdRole).toLongLong());
  });
  connect(s_->open, &QPushButton::clicked, this, [this] {
    if (store_changed()) return refresh();
    if (const qint64 id = s_->selected_id(); id >= 0) emit openSession(id);
  });
  connect(s_->reload, &QPushButton::clicked, this, &SessionLibraryView::refresh);
  connect(s_->remove, &QPushButton::clicked, this, [this] {
    const qint64 id = s_->selected_id();
    if (id < 0) return;
    QString what = s_->selected_title();
    if (what.size() > 80) what = what.left(79) + QChar(0x2026);
    const auto answer = QMessageBox::question(
        this, tr("Delete session"),
        tr("Delete session %1 (\"%2\") with all its runs and steps?\nThis cannot be undone.").arg(id).arg(what),
        QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer != QMessageBox::Yes) return;
    if (store_changed()) return refresh();  // the file may have changed while the question was up
    try {
      if (!sessions::delete_session(s_->db_path.toStdString(), id))
        emit errorMessage(tr("Session %1 was already gone").arg(id));
    } catch (const std::exception& e) {
      emit errorMessage(tr("Cannot delete session %1: %2").arg(id).arg(QString::fromStdString(e.what())));
    }
    refresh();
  });
  s_->update_buttons();
  s_->update_status();
}

SessionLibraryView::~SessionLibraryView() = default;

void SessionLibraryView::setDatabase(const QString& path) {
  s_->db_path = path;
  refresh();
}

bool SessionLibraryView::store_changed() const {
  return s_->listed_path == s_->db_path &&
         sessions::store_change(s_->listed, sessions::store_identity(s_->db_path.toStdString())) != sessions::StoreChange::Same;
}

void SessionLibraryView::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (store_changed()) refresh();  // rows of a file that is gone are not shown, even for a moment's glance
}

void SessionLibraryView::refresh() {
  const std::string path = s_->db_path.toStdString();
  // Deleted or replaced since the rows were read: said once, in one line, and the rows come from what is there now.
  const auto now = sessions::store_identity(path);
  const auto change = s_->listed_path == s_->db_path ? sessions::store_change(s_->listed, now) : sessions::StoreChange::Same;
  s_->listed = now;
  s_->listed_path = s_->db_path;
  s_->notice.clear();
  const qint64 keep = change == sessions::StoreChange::Same ? s_->selected_id() : -1;  // an id of the old file
  s_->error.clear();
  s_->model->removeRows(0, s_->model->rowCount());

  std::vector<sessions::SessionListing> listings;
  std::unique_ptr<sessions::SessionReader> reader;
  std::error_code ec;
  // No store yet (nothing recorded): an empty library, not an error.
  if (!path.empty() && std::filesystem::exists(path, ec)) {
    try {
      reader = std::make_unique<sessions::SessionReader>(path);
      listings = reader->list();
    } catch (const std::exception& e) {  // InputError (corrupt, newer, foreign), or SQLite failing under us
      s_->error = QString::fromStdString(e.what());
      listings.clear();
    }
  }

  s_->table->setSortingEnabled(false);  // fill, then sort once
  for (const auto& l : listings) {
    QList<QStandardItem*> row;
    const QString id = QString::number(l.id);
    row << number_item(double(l.id), id);

    const QDateTime when = QDateTime::fromString(QString::fromStdString(l.created_at), Qt::ISODateWithMs);
    const QString date = when.isValid() ? when.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"))
                                        : QString::fromStdString(l.created_at);
    auto* date_item = text_item(date, date, QString::fromStdString(l.created_at));
    date_item->setToolTip(QString::fromStdString(l.created_at));
    row << date_item;
    row << text_item(QString::fromStdString(l.kind));
    auto* model_item = text_item(model_name(l.model_path), QString::fromStdString(l.model_path),
                                 model_name(l.model_path).toLower());
    model_item->setToolTip(QString::fromStdString(l.model_path));
    row << model_item;
    QStringList methods;  // the lanes' labels once the session is read; the listing's methods until then
    for (const auto& m : l.methods) methods << QString::fromStdString(m);
    auto* methods_item = text_item(methods.join(QStringLiteral(", ")));
    row << methods_item;

    // The runs' prompt and outcomes. A session that cannot be read (a run left half-written) keeps its
    // listing and shows blanks.
    std::string prompt;
    long tokens = 0;
    bool any_outcome = false;
    double tau = std::nan(""), speedup = std::nan("");
    try {
      const auto session = reader->session(l.id);
      if (!session.runs.empty()) prompt = session.runs.front().meta.prompt;
      if (prompt.empty() && l.title.size()) prompt = l.title;
      double first_tau = std::nan("");
      QStringList labels;
      for (const auto& run : session.runs) {
        // A race's reference runs (vanilla on each target) are the yardstick, not one of its lanes.
        if (run.meta.lane && *run.meta.lane < 0) continue;
        const QString label = QString::fromStdString(run.meta.label.empty() ? run.meta.method.name : run.meta.label);
        if (!labels.contains(label)) labels << label;
        if (!run.outcome) continue;
        const auto& sum = run.outcome->summary;
        any_outcome = true;
        tokens += sum.new_tokens;
        if (std::isnan(first_tau)) first_tau = sum.tau;
        if (run.meta.method.name != "vanilla") {
          if (std::isnan(tau)) tau = sum.tau;
          if (std::isfinite(sum.speedup_vs_vanilla) && (std::isnan(speedup) || sum.speedup_vs_vanilla > speedup))
            speedup = sum.speedup_vs_vanilla;
        }
      }
      if (std::isnan(tau)) tau = first_tau;
      if (!labels.isEmpty()) {
        const QString shown = labels.join(QStringLiteral(", "));
        methods_item->setText(shown);
        methods_item->setData(shown, kFilterRole);
        methods_item->setData(shown.toLower(), kSortRole);
      }
    } catch (const std::exception&) {
      if (prompt.empty()) prompt = l.title;
    }
    auto* prompt_item = text_item(elide(prompt, 90), QString::fromStdString(prompt),
                                  QString::fromStdString(prompt).toLower());
    prompt_item->setToolTip(QString::fromStdString(prompt).left(2000));
    row << prompt_item;
    row << (any_outcome ? number_item(double(tokens), QString::number(tokens)) : blank_number_item());
    row << (std::isfinite(tau) ? number_item(tau, QString::number(tau, 'f', 2)) : blank_number_item());
    row << (std::isfinite(speedup) ? number_item(speedup, QString::number(speedup, 'f', 2) + QChar(0x00D7))
                                   : blank_number_item());
    row << number_item(double(l.steps), QString::number(l.steps));
    for (auto* item : row) item->setData(qlonglong(l.id), kIdRole);
    s_->model->appendRow(row);
  }
  s_->table->setSortingEnabled(true);  // re-sorts by the header's current column and order

  if (keep >= 0) {
    for (int r = 0; r < s_->proxy->rowCount(); ++r) {
      const QModelIndex index = s_->proxy->index(r, 0);
      if (index.data(kIdRole).toLongLong() == keep) {
        s_->table->selectRow(r);
        break;
      }
    }
  }
  if (change == sessions::StoreChange::Deleted)
    s_->notice = tr("The session store %1 was deleted; a new one is made there at the next recorded run").arg(s_->db_path);
  else if (change == sessions::StoreChange::Replaced && s_->error.isEmpty())
    s_->notice = tr("The session store %1 was replaced by another file: %2 in it")
                     .arg(s_->db_path, listings.size() == 1 ? tr("1 session") : tr("%1 sessions").arg(listings.size()));
  s_->update_status();
  s_->update_buttons();
  if (!s_->error.isEmpty()) emit errorMessage(tr("Cannot read the session store: %1").arg(s_->error));
  else if (!s_->notice.isEmpty()) emit errorMessage(s_->notice);
}

int SessionLibraryView::rowCount() const { return s_->proxy->rowCount(); }

void SessionLibraryView::setFilter(const QString& text) {
  if (s_->search->text() == text) {
    s_->proxy->setTerms(text);
    s_->update_status();
  } else {
    s_->search->setText(text);  // textChanged applies it
  }
}

bool SessionLibraryView::exportPng(const QString& path) {
  const QPixmap pixmap = grab();
  return !pixmap.isNull() && pixmap.save(path, "PNG");
}

}  // namespace specscope::ui
