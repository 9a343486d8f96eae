#include "ui/views/statistics_view.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPushButton>
#include <QVBoxLayout>
#include <QHorizontalStackedBarSeries>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPainter>
#include <QPen>
#include <QPixmap>
#include <QScatterSeries>
#include <QToolTip>
#include <QValueAxis>
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "runs/cost_model.h"
#include "runs/run_statistics.h"
#include "ui/engine/step_focus.h"

namespace specscope::ui {

namespace {

// Okabe & Ito's colour-blind-safe palette, in the order runs take it (yellow last: weak on white).
const std::array<QColor, 8> kRunColours = {
    QColor(0x00, 0x72, 0xB2),  // blue
    QColor(0xE6, 0x9F, 0x00),  // orange
    QColor(0x00, 0x9E, 0x73),  // bluish green
    QColor(0xD5, 0x5E, 0x00),  // vermillion
    QColor(0xCC, 0x79, 0xA7),  // reddish purple
    QColor(0x56, 0xB4, 0xE9),  // sky blue
    QColor(0x00, 0x00, 0x00),  // black
    QColor(0xF0, 0xE4, 0x42),  // yellow
};
// On the dark theme's background Okabe-Ito's black would vanish: a light grey takes its place.
QColor run_colour(int i, bool dark) {
  const QColor c = kRunColours[size_t(i) % kRunColours.size()];
  return dark && c == QColor(Qt::black) ? QColor(0xd0, 0xd0, 0xd0) : c;
}

// The time split's parts: also Okabe-Ito, but not the first runs' colours, so a part is not taken for a run.
const QColor kDraftColour(0xCC, 0x79, 0xA7);   // reddish purple
const QColor kVerifyColour(0x56, 0xB4, 0xE9);  // sky blue
const QColor kOtherColour(0xB0, 0xB0, 0xB0);   // grey

struct RunData {
  QString name;
  int colour = 0;
  runs::StepSpan span;  // the steps counted (a selected range), indices into the run's steps
  bool has_tree = false;  // drafted at least once (vanilla: no)
  runs::RunStatistics stats;
  double tau = 0;
  // The cost model (when the target's step-cost curve is known): its verdict beside the measured speedup.
  std::string target;
  std::optional<runs::RunCostModel> cost;
  std::vector<int> tree_sizes;        // target_tokens of its decoding steps, distinct, ascending
  double measured_speedup = 0;        // 0: no reference run
  // A reasoning reply: speculation while the model thought and while it answered (the whole run).
  std::optional<runs::ReplyPartStatistics> reply_parts;
};

// A theme resets everything set on a chart before it (fonts, margins, roundness): so all of it is set here.
void style_chart(QChart* chart, bool dark) {
  chart->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
  chart->setBackgroundRoundness(0);
  chart->setMargins(QMargins(4, 4, 4, 4));
  QFont font = chart->titleFont();
  font.setPointSizeF(std::max(9.0, font.pointSizeF()));
  font.setBold(true);
  chart->setTitleFont(font);
  chart->legend()->setAlignment(Qt::AlignBottom);
  for (QAbstractAxis* axis : chart->axes()) {
    QFont f = axis->titleFont();
    f.setBold(false);
    axis->setTitleFont(f);
  }
}

QChartView* make_chart_view(const QString& title, QWidget* parent) {
  auto* chart = new QChart;
  chart->setAnimationOptions(QChart::NoAnimation);
  style_chart(chart, false);
  chart->setTitle(title);
  auto* view = new QChartView(chart, parent);
  view->setRenderHint(QPainter::Antialiasing, true);
  view->setRenderHint(QPainter::TextAntialiasing, true);
  view->setMinimumSize(260, 200);
  return view;
}

void plain_title(QAbstractAxis* axis, const QString& title) {
  axis->setTitleText(title);
  QFont f = axis->titleFont();
  f.setBold(false);
  axis->setTitleFont(f);
}

// The axes live as long as their chart: series come and go with each setRuns, the axes are re-ranged.
// (Removing an axis defers deleting its graphics, so a grab right after a redraw would show both.)
QValueAxis* add_value_axis(QChart* chart, Qt::Alignment where, const QString& title) {
  auto* axis = new QValueAxis;
  plain_title(axis, title);
  chart->addAxis(axis, where);
  return axis;
}

QBarCategoryAxis* add_category_axis(QChart* chart, Qt::Alignment where, const QString& title) {
  auto* axis = new QBarCategoryAxis;
  plain_title(axis, title);
  chart->addAxis(axis, where);
  return axis;
}

// An axis from 0 that ends on a readable number: a step of 1, 2, 2.5 or 5 times a power of ten giving about
// five intervals, the maximum a whole number of steps, and labels with as many decimals as the step needs.
void set_nice_range(QValueAxis* axis, double v) {
  if (!(v > 0) || !std::isfinite(v)) v = 1;
  const double raw = v / 5;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double m = 10;
  for (double c : {1.0, 2.0, 2.5, 5.0})
    if (raw <= c * p * (1 + 1e-9)) {
      m = c;
      break;
    }
  const double step = m * p;
  const double n = std::max(1.0, std::ceil(v / step - 1e-9));
  int decimals = p >= 1 ? 0 : int(std::lround(-std::log10(p)));  // step 0.2: 1, 0.05: 2
  if (m == 2.5 && p <= 1) ++decimals;                               // step 2.5: 1, 0.25: 2
  axis->setRange(0, n * step);
  axis->setTickCount(int(n) + 1);
  axis->setLabelFormat(QStringLiteral("%.%1f").arg(decimals));
}

void set_fixed_range(QValueAxis* axis, double lo, double hi, int ticks, const char* format) {
  axis->setRange(lo, hi);
  axis->setTickCount(ticks);
  axis->setLabelFormat(format);
}

void set_categories(QBarCategoryAxis* axis, const QStringList& categories) {
  axis->clear();
  axis->append(categories);
}

QBarSet* bar_set(const QString& name, const QColor& colour) {
  auto* set = new QBarSet(name);
  set->setColor(colour);
  set->setBorderColor(colour.darker(130));
  return set;
}

// A target folder as the step-cost curves are keyed: lanes may spell one folder differently ("base/", "./base").
std::string target_key(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  if (ec) p = std::filesystem::path(path).lexically_normal();
  std::string key = p.string();
  while (key.size() > 1 && key.back() == '/') key.pop_back();
  return key;
}

void attach(QAbstractSeries* series, QAbstractAxis* x, QAbstractAxis* y) {
  series->attachAxis(x);
  series->attachAxis(y);
}

}  // namespace

struct StatisticsView::State {
  QChartView* histogram = nullptr;
  QChartView* depth = nullptr;
  QChartView* calibration = nullptr;
  QChartView* throughput = nullptr;
  QChartView* time_split = nullptr;
  QChartView* tau = nullptr;
  QChartView* cost = nullptr;        // the step-cost curve with the runs' tree sizes marked
  QLabel* cost_text = nullptr;       // per run: measured vs expected speedup, and the losing term
  QValueAxis *cost_x = nullptr, *cost_y = nullptr;
  std::map<std::string, runs::StepCost> step_costs;  // by target path
  QBarCategoryAxis *histogram_x = nullptr, *depth_x = nullptr, *time_runs = nullptr, *tau_x = nullptr;
  QValueAxis *histogram_y = nullptr, *depth_y = nullptr, *calibration_x = nullptr, *calibration_y = nullptr,
             *throughput_x = nullptr, *throughput_y = nullptr, *time_x = nullptr, *tau_y = nullptr;
  std::vector<RunData> runs;
  bool range_filtered = false;  // the runs' figures count a selected range of steps only
  // The runs as last given (copied: the views' store moves on), kept to recount when the range changes.
  runs::TraceStore traces;
  StepFocus* focus = nullptr;
  QWidget* range_bar = nullptr;
  QLabel* range_label = nullptr;
  // The throughput chart's points: where each run's point of a step is, in chart values, with the step's index.
  struct StepPoint {
    int run = 0, step = 0;
    QPointF value;
    QLineSeries* series = nullptr;
  };
  std::vector<StepPoint> step_points;
  QPoint press_at{-1, -1};
  bool dark = false;
  QColor colour(const RunData& r) const { return run_colour(r.colour, dark); }

  void draw_histogram();
  void draw_depth();
  void draw_calibration();
  void draw_throughput();
  void draw_time_split();
  void draw_tau();
  void draw_cost();
};

StatisticsView::StatisticsView(QWidget* parent) : QWidget(parent), s_(std::make_unique<State>()) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->setSpacing(0);
  auto& s = *s_;
  // Shown while a range of steps is selected on a timeline: which steps the charts count, and a way back.
  s.range_bar = new QWidget(this);
  auto* rb = new QHBoxLayout(s.range_bar);
  rb->setContentsMargins(8, 4, 8, 0);
  s.range_label = new QLabel(s.range_bar);
  s.range_label->setObjectName(QStringLiteral("statisticsRange"));
  QFont bold = s.range_label->font();
  bold.setBold(true);
  s.range_label->setFont(bold);
  auto* all = new QPushButton(tr("Show all steps"), s.range_bar);
  all->setObjectName(QStringLiteral("statisticsAllSteps"));
  rb->addWidget(s.range_label, 1);
  rb->addWidget(all);
  s.range_bar->hide();
  connect(all, &QPushButton::clicked, this, [this] {
    if (s_->focus) s_->focus->clearRange();
  });
  outer->addWidget(s.range_bar);
  auto* charts = new QWidget(this);
  outer->addWidget(charts, 1);
  auto* grid = new QGridLayout(charts);
  grid->setContentsMargins(4, 4, 4, 4);
  grid->setSpacing(4);
  s.histogram = make_chart_view(tr("Accepted drafts per step"), this);
  s.depth = make_chart_view(tr("Acceptance rate by depth"), this);
  s.calibration = make_chart_view(tr("Draft confidence vs. acceptance"), this);
  s.throughput = make_chart_view(tr("Throughput over time"), this);
  s.time_split = make_chart_view(tr("Where the decoding time went"), this);
  s.tau = make_chart_view(tr("Tokens per target forward (τ)"), this);
  s.cost = make_chart_view(tr("Step cost on this machine"), this);
  s.cost->setObjectName(QStringLiteral("costChart"));
  s.histogram->setObjectName(QStringLiteral("histogramChart"));
  s.tau->setObjectName(QStringLiteral("tauChart"));
  s.throughput->setObjectName(QStringLiteral("throughputChart"));
  // A click on a point of the per-step chart opens its step (eventFilter).
  s.throughput->viewport()->installEventFilter(this);
  s.throughput->chart()->setToolTip(tr("Each point is a decoding step: click one to open it in the inspector."));
  s.cost_x = add_value_axis(s.cost->chart(), Qt::AlignBottom, tr("tokens verified per step (n)"));
  s.cost_y = add_value_axis(s.cost->chart(), Qt::AlignLeft, tr("ms per target forward"));
  s.cost->chart()->setToolTip(
      tr("This machine's n-token step-cost curve (measured once per model and backend, then cached); the markers are "
         "the tree sizes the runs verified. Expected speedup = τ ÷ ((verify cost + drafting) ÷ cost(1))."));
  s.cost_text = new QLabel(this);
  s.cost_text->setObjectName(QStringLiteral("costModelText"));
  s.cost_text->setWordWrap(true);
  s.cost_text->setTextFormat(Qt::RichText);
  s.cost_text->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  s.cost_text->setMargin(6);

  s.histogram_x = add_category_axis(s.histogram->chart(), Qt::AlignBottom, tr("drafts accepted in the step"));
  s.histogram_y = add_value_axis(s.histogram->chart(), Qt::AlignLeft, tr("share of steps (%)"));
  s.depth_x = add_category_axis(s.depth->chart(), Qt::AlignBottom, tr("draft depth"));
  s.depth_y = add_value_axis(s.depth->chart(), Qt::AlignLeft, tr("P(accept | parent accepted)"));
  set_fixed_range(s.depth_y, 0, 1, 6, "%.1f");
  s.calibration_x = add_value_axis(s.calibration->chart(), Qt::AlignBottom, tr("draft confidence (bin mean)"));
  s.calibration_y = add_value_axis(s.calibration->chart(), Qt::AlignLeft, tr("fraction accepted"));
  set_fixed_range(s.calibration_x, 0, 1, 6, "%.1f");
  set_fixed_range(s.calibration_y, 0, 1, 6, "%.1f");
  s.throughput_x = add_value_axis(s.throughput->chart(), Qt::AlignBottom, QString());
  s.throughput_y = add_value_axis(s.throughput->chart(), Qt::AlignLeft, tr("tokens/s"));
  s.time_runs = add_category_axis(s.time_split->chart(), Qt::AlignLeft, QString());
  s.time_x = add_value_axis(s.time_split->chart(), Qt::AlignBottom, QString());
  s.tau_x = add_category_axis(s.tau->chart(), Qt::AlignBottom, tr("mean over the decoding steps"));
  set_categories(s.tau_x, {QStringLiteral(" ")});
  s.tau_y = add_value_axis(s.tau->chart(), Qt::AlignLeft, tr("τ (accepted drafts + 1)"));
  s.time_split->chart()->setToolTip(
      tr("Decoding steps only (the prefill is left out). Verify: the target's forward over the draft and the "
         "acceptance test; KV update: keeping the accepted path's cache."));
  s.calibration->chart()->setToolTip(
      tr("Verified drafts (not pruned, accepted or rejected) binned by the drafter's probability: a well-calibrated "
         "drafter lies on the diagonal. Hover a point for its bin."));

  grid->addWidget(s.histogram, 0, 0);
  grid->addWidget(s.depth, 0, 1);
  grid->addWidget(s.calibration, 0, 2);
  grid->addWidget(s.throughput, 1, 0);
  grid->addWidget(s.time_split, 1, 1);
  grid->addWidget(s.tau, 1, 2);
  grid->addWidget(s.cost, 2, 0);
  grid->addWidget(s.cost_text, 2, 1, 1, 2);
  for (int c = 0; c < 3; ++c) grid->setColumnStretch(c, 1);
  for (int r = 0; r < 3; ++r) grid->setRowStretch(r, 1);
  setRuns({});
}

StatisticsView::~StatisticsView() = default;

void StatisticsView::setRuns(const std::vector<const runs::RunTrace*>& runs) {
  std::vector<runs::RunTrace> copies;
  for (const runs::RunTrace* t : runs)
    if (t) copies.push_back(*t);
  // TraceStore::reset keeps a lane's identity only; the recorded steps and texts go back in lane by lane.
  s_->traces.reset(copies);
  for (int l = 0; l < int(copies.size()); ++l) s_->traces.lane_mut(l) = std::move(copies[size_t(l)]);
  redraw();
}

void StatisticsView::redraw() {
  s_->runs.clear();
  const StepSelection range = s_->focus ? s_->focus->range() : StepSelection{};
  const bool filtered = range.valid() && range.lane < s_->traces.lanes();
  for (int l = 0; l < s_->traces.lanes(); ++l) {
    const runs::RunTrace* t = &s_->traces.lane(l);
    RunData d;
    d.colour = l;
    const std::string& label = t->label.empty() ? t->method : t->label;
    const QString name = QString::fromStdString(label.empty() ? std::string("run") : label);
    // Two runs of one method: tell them apart.
    int same = 0;
    for (const auto& other : s_->runs)
      if (other.name == name || other.name.startsWith(name + QStringLiteral(" ("))) ++same;
    d.name = same ? QStringLiteral("%1 (%2)").arg(name).arg(same + 1) : name;
    d.span = filtered ? span_in_lane(s_->traces, range, l) : runs::StepSpan{};
    d.stats = runs::compute_statistics(t->steps, d.span);
    d.has_tree = !d.stats.accepted_length_histogram.empty();
    // The whole run's τ is its summary's (as the CLI printed it); a part's is the same definition over its steps.
    d.tau = filtered ? d.stats.tau : t->summary ? t->summary->tau : d.stats.tau;
    d.target = target_key(t->target);
    // Measured: the whole run's speedup as the runner measured it; a range's, its steps' tokens and time against
    // the same reference's rate.
    if (t->summary && std::isfinite(t->summary->speedup_vs_vanilla) && t->summary->speedup_vs_vanilla > 0)
      d.measured_speedup = filtered ? runs::measured_speedup(t->steps, d.span, runs::reference_tokens_per_second(*t->summary))
                                    : t->summary->speedup_vs_vanilla;
    if (t->reply.format != ReplyFormat::Plain) d.reply_parts = runs::reply_part_statistics(t->steps, t->pieces, t->reply);
    if (auto c = s_->step_costs.find(d.target); c != s_->step_costs.end() && !c->second.ms.empty()) {
      d.cost = runs::model_run_cost(t->steps, d.span, c->second);  // the range's steps only, when one is selected
      std::set<int> sizes;
      for (const auto& b : d.cost->steps) sizes.insert(b.target_tokens);
      d.tree_sizes.assign(sizes.begin(), sizes.end());
    }
    s_->runs.push_back(std::move(d));
  }
  if (filtered) {
    const runs::RunTrace& t = s_->traces.lane(range.lane);
    const int n = int(t.steps.size());
    const int last = std::min(range.last, n - 1);
    const QString lane = QString::fromStdString(t.label.empty() ? t.method : t.label);
    s_->range_label->setText(
        range.first < n
            ? tr("Steps %1–%2 of %3 (%4)%5: every chart counts these steps only")
                  .arg(t.steps[size_t(range.first)].step)
                  .arg(t.steps[size_t(last)].step)
                  .arg(t.steps.back().step)
                  .arg(lane, s_->traces.lanes() > 1 ? tr("; the other lanes over the same text") : QString())
            : tr("Steps %1–%2 of %3 (%4): not recorded yet").arg(range.first).arg(range.last).arg(n - 1).arg(lane));
  }
  s_->range_bar->setVisible(filtered);
  s_->range_filtered = filtered;
  s_->draw_histogram();
  s_->draw_depth();
  s_->draw_calibration();
  s_->draw_throughput();
  s_->draw_time_split();
  s_->draw_tau();
  s_->draw_cost();
}

void StatisticsView::setStepFocus(StepFocus* focus) {
  if (s_->focus) disconnect(s_->focus, nullptr, this, nullptr);
  s_->focus = focus;
  if (focus) connect(focus, &StepFocus::rangeChanged, this, [this] { redraw(); });
  redraw();
}

runs::RunStatistics StatisticsView::shownStatistics(int run) const {
  return run >= 0 && run < int(s_->runs.size()) ? s_->runs[size_t(run)].stats : runs::RunStatistics{};
}

std::optional<runs::RunCostModel> StatisticsView::shownCostModel(int run) const {
  return run >= 0 && run < int(s_->runs.size()) ? s_->runs[size_t(run)].cost : std::nullopt;
}

double StatisticsView::shownMeasuredSpeedup(int run) const {
  return run >= 0 && run < int(s_->runs.size()) ? s_->runs[size_t(run)].measured_speedup : 0.0;
}

QString StatisticsView::costModelText() const { return s_->cost_text->text(); }

double StatisticsView::shownTau(int run) const {
  return run >= 0 && run < int(s_->runs.size()) ? s_->runs[size_t(run)].tau : 0.0;
}

QString StatisticsView::rangeText() const { return s_->range_bar->isVisibleTo(this) ? s_->range_label->text() : QString(); }

QPoint StatisticsView::throughputPoint(int run, int step) const {
  for (const auto& p : s_->step_points)
    if (p.run == run && p.step == step) {
      const QPointF scene = s_->throughput->chart()->mapToScene(s_->throughput->chart()->mapToPosition(p.value, p.series));
      return s_->throughput->mapFromScene(scene);
    }
  return {-1, -1};
}

bool StatisticsView::eventFilter(QObject* watched, QEvent* e) {
  if (watched != s_->throughput->viewport()) return QWidget::eventFilter(watched, e);
  if (e->type() == QEvent::MouseButtonPress) {
    s_->press_at = static_cast<QMouseEvent*>(e)->position().toPoint();
  } else if (e->type() == QEvent::MouseButtonRelease && static_cast<QMouseEvent*>(e)->button() == Qt::LeftButton) {
    const QPoint at = static_cast<QMouseEvent*>(e)->position().toPoint();
    if ((at - s_->press_at).manhattanLength() > 4) return false;  // a drag, not a click
    // The nearest step's point within a few pixels of the click.
    const State::StepPoint* best = nullptr;
    double best_d = 12.0 * 12.0;
    for (const auto& p : s_->step_points) {
      const QPoint q = throughputPoint(p.run, p.step);
      const double d = double((q - at).x()) * (q - at).x() + double((q - at).y()) * (q - at).y();
      if (d <= best_d) best_d = d, best = &p;
    }
    if (best) {
      const int run = best->run, step = best->step;
      emit stepClicked(run, step);
      if (s_->focus) s_->focus->open(run, step);
    }
  }
  return false;
}

void StatisticsView::setStepCost(const QString& target_path, const runs::StepCost& cost) {
  s_->step_costs[target_key(target_path.toStdString())] = cost;
}

void StatisticsView::setDark(bool dark) {
  s_->dark = dark;
  for (QChartView* v : {s_->histogram, s_->depth, s_->calibration, s_->throughput, s_->time_split, s_->tau, s_->cost})
    style_chart(v->chart(), dark);
  // The series were coloured by the old theme: draw them again.
  redraw();
}

bool StatisticsView::dark() const { return s_->dark; }

bool StatisticsView::exportPng(const QString& path) {
  const QPixmap pixmap = grab();
  return !pixmap.isNull() && pixmap.save(path, "PNG");
}

void StatisticsView::State::draw_histogram() {
  QChart* chart = histogram->chart();
  chart->removeAllSeries();
  // Shares rather than counts: runs that accept more take fewer steps for the same text.
  size_t width = 1;
  for (const auto& r : runs) width = std::max(width, r.stats.accepted_length_histogram.size());
  QStringList categories;
  for (size_t k = 0; k < width; ++k) categories << QString::number(k);
  set_categories(histogram_x, categories);
  auto* series = new QBarSeries;
  double top = 0;
  for (const auto& r : runs) {
    if (!r.has_tree) continue;
    long total = 0;
    for (long c : r.stats.accepted_length_histogram) total += c;
    auto* set = bar_set(r.name, colour(r));
    for (size_t k = 0; k < width; ++k) {
      const long c = k < r.stats.accepted_length_histogram.size() ? r.stats.accepted_length_histogram[k] : 0;
      const double share = total ? 100.0 * double(c) / double(total) : 0;
      top = std::max(top, share);
      *set << share;
    }
    series->append(set);
  }
  set_nice_range(histogram_y, std::max(top, 10.0));
  chart->addSeries(series);
  attach(series, histogram_x, histogram_y);
  chart->legend()->setVisible(series->count() > 0);
}

void StatisticsView::State::draw_depth() {
  QChart* chart = depth->chart();
  chart->removeAllSeries();
  // A depth is only tried when the one above accepted something, so after a depth at 0 every deeper one is
  // 0 because nothing was tried there (the drafter's tree was just deeper): those are not drawn.
  auto shown_depths = [](const std::vector<double>& rates) {
    for (size_t d = 0; d < rates.size(); ++d)
      if (rates[d] <= 0) return d + 1;
    return rates.size();
  };
  size_t width = 1;
  for (const auto& r : runs)
    if (r.has_tree) width = std::max(width, shown_depths(r.stats.acceptance_by_depth));
  QStringList categories;
  for (size_t d = 0; d < width; ++d) categories << QString::number(d + 1);
  set_categories(depth_x, categories);
  auto* series = new QBarSeries;
  for (const auto& r : runs) {
    if (!r.has_tree) continue;
    auto* set = bar_set(r.name, colour(r));
    for (size_t d = 0; d < width; ++d)
      *set << (d < r.stats.acceptance_by_depth.size() ? r.stats.acceptance_by_depth[d] : 0.0);
    series->append(set);
  }
  chart->addSeries(series);
  attach(series, depth_x, depth_y);
  chart->legend()->setVisible(series->count() > 0);
}

void StatisticsView::State::draw_calibration() {
  QChart* chart = calibration->chart();
  chart->removeAllSeries();

  auto* diagonal = new QLineSeries;
  diagonal->setName(QObject::tr("perfect calibration"));
  QPen dashed(QColor(0x77, 0x77, 0x77));
  dashed.setStyle(Qt::DashLine);
  dashed.setWidthF(1.5);
  diagonal->setPen(dashed);
  *diagonal << QPointF(0, 0) << QPointF(1, 1);
  chart->addSeries(diagonal);
  attach(diagonal, calibration_x, calibration_y);

  for (const auto& r : runs) {
    long calibrated = 0;
    for (const auto& bin : r.stats.calibration) calibrated += bin.nodes;
    if (calibrated == 0) continue;  // no draft probabilities (prompt lookup, n-grams): nothing to calibrate
    const QColor colour = this->colour(r);
    auto* line = new QLineSeries;
    line->setName(r.name);
    QPen pen(colour);
    pen.setWidthF(2);
    line->setPen(pen);
    auto* dots = new QScatterSeries;
    dots->setName(r.name);
    dots->setColor(colour);
    dots->setBorderColor(colour.darker(130));
    dots->setMarkerSize(8);
    QStringList tips;
    for (const auto& bin : r.stats.calibration) {
      if (bin.nodes == 0) continue;
      const QPointF p(bin.mean_confidence, bin.acceptance);
      *line << p;
      *dots << p;
      tips << QObject::tr("%1: confidence %2–%3, %4 verified drafts, %5% accepted")
                  .arg(r.name)
                  .arg(bin.lo, 0, 'f', 1)
                  .arg(bin.hi, 0, 'f', 1)
                  .arg(bin.nodes)
                  .arg(100 * bin.acceptance, 0, 'f', 0);
    }
    QObject::connect(dots, &QScatterSeries::hovered, dots, [dots, tips](const QPointF& point, bool state) {
      if (!state) {
        QToolTip::hideText();
        return;
      }
      const auto points = dots->points();
      for (qsizetype i = 0; i < points.size() && i < tips.size(); ++i)
        if (points[i] == point) QToolTip::showText(QCursor::pos(), tips[i]);
    });
    chart->addSeries(line);
    chart->addSeries(dots);
    attach(line, calibration_x, calibration_y);
    attach(dots, calibration_x, calibration_y);
    for (QLegendMarker* m : chart->legend()->markers(dots)) m->setVisible(false);  // the line names the run
  }
}

void StatisticsView::State::draw_throughput() {
  QChart* chart = throughput->chart();
  chart->removeAllSeries();
  // Per-step throughput is noisy (one step is one forward): a moving average over a few steps, the same
  // window for every run so they compare.
  size_t longest = 0;
  double span = 0;
  for (const auto& r : runs) {
    longest = std::max(longest, r.stats.tokens_per_second.size());
    if (!r.stats.cumulative_seconds.empty()) span = std::max(span, r.stats.cumulative_seconds.back());
  }
  const size_t window = std::clamp<size_t>(longest / 20, 1, 10);
  step_points.clear();
  chart->setTitle(window > 1 ? QObject::tr("Throughput (%1-step moving avg.)").arg(window)
                             : QObject::tr("Throughput over time"));
  const bool ms = span < 2.0;  // short runs read better in milliseconds
  const double scale = ms ? 1000.0 : 1.0;
  double top = 0;
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    const RunData& r = runs[ri];
    const auto& tps = r.stats.tokens_per_second;
    const auto& at = r.stats.cumulative_seconds;
    auto* line = new QLineSeries;
    line->setName(r.name);
    line->setPointsVisible(tps.size() <= 300);  // each point is a step that a click opens
    QPen pen(colour(r));
    pen.setWidthF(2);
    line->setPen(pen);
    // The curve starts at the first full window (a mean over one or two steps would spike), unless the run
    // is too short to have one.
    const size_t first = tps.size() >= window ? window - 1 : 0;
    double sum = 0;
    for (size_t i = 0; i < tps.size(); ++i) {
      sum += tps[i];
      if (i >= window) sum -= tps[i - window];
      if (i < first) continue;
      const double mean = sum / double(std::min(i + 1, window));
      top = std::max(top, mean);
      *line << QPointF(at[i] * scale, mean);
      step_points.push_back({int(ri), r.stats.step_index[i], QPointF(at[i] * scale, mean), line});
    }
    chart->addSeries(line);
    attach(line, throughput_x, throughput_y);
  }
  plain_title(throughput_x, ms ? QObject::tr("time since the first step (ms)") : QObject::tr("time since the first step (s)"));
  set_nice_range(throughput_x, span * scale);
  set_nice_range(throughput_y, top * 1.02);
  chart->legend()->setVisible(!runs.empty());
}

void StatisticsView::State::draw_time_split() {
  QChart* chart = time_split->chart();
  chart->removeAllSeries();
  double longest = 0;
  for (const auto& r : runs)
    longest = std::max(longest, r.stats.draft_seconds + r.stats.verify_seconds + r.stats.other_seconds);
  const bool ms = longest < 2.0;
  const double scale = ms ? 1000.0 : 1.0;
  auto* draft = bar_set(QObject::tr("draft"), kDraftColour);
  auto* verify = bar_set(QObject::tr("verify"), kVerifyColour);
  auto* other = bar_set(QObject::tr("KV update"), kOtherColour);
  QStringList categories;
  // Horizontal bars list categories bottom-up: add the runs in reverse so the first run is on top.
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    categories << it->name;
    *draft << it->stats.draft_seconds * scale;
    *verify << it->stats.verify_seconds * scale;
    *other << it->stats.other_seconds * scale;
  }
  set_categories(time_runs, categories.isEmpty() ? QStringList{QStringLiteral(" ")} : categories);
  plain_title(time_x, ms ? QObject::tr("decoding time (ms)") : QObject::tr("decoding time (s)"));
  set_nice_range(time_x, longest * scale);
  auto* series = new QHorizontalStackedBarSeries;
  series->append(draft);
  series->append(verify);
  series->append(other);
  series->setBarWidth(runs.size() <= 1 ? 0.4 : 0.7);
  chart->addSeries(series);
  attach(series, time_x, time_runs);
  chart->legend()->setVisible(!runs.empty());
}

void StatisticsView::State::draw_tau() {
  QChart* chart = tau->chart();
  chart->removeAllSeries();
  auto* series = new QBarSeries;
  double top = 0;
  for (const auto& r : runs) {
    auto* set = bar_set(r.name, colour(r));
    *set << r.tau;
    set->setLabelColor(dark ? QColor(0xe6, 0xe6, 0xe6) : QColor(0x22, 0x22, 0x22));
    top = std::max(top, r.tau);
    series->append(set);
  }
  series->setLabelsVisible(true);
  series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
  series->setLabelsFormat(QStringLiteral("@value"));
  series->setLabelsPrecision(3);
  set_nice_range(tau_y, std::max(1.0, top * 1.15));
  chart->addSeries(series);
  attach(series, tau_x, tau_y);
  chart->legend()->setVisible(!runs.empty());
}

void StatisticsView::State::draw_cost() {
  QChart* chart = cost->chart();
  chart->removeAllSeries();
  // One curve per target the runs share (usually one), then each run's tree sizes on it.
  std::set<std::string> drawn;
  double right = 8, top = 0;
  for (const auto& r : runs)
    for (int n : r.tree_sizes) right = std::max(right, double(n));
  for (const auto& r : runs) {
    if (!r.cost || drawn.count(r.target)) continue;
    drawn.insert(r.target);
    const runs::StepCost& c = step_costs.at(r.target);
    auto* line = new QLineSeries;
    line->setName(drawn.size() == 1 ? QObject::tr("step cost") : QObject::tr("step cost (%1)").arg(r.name));
    line->setObjectName(QStringLiteral("stepCostSeries"));
    QPen pen(dark ? QColor(0xe6, 0xe6, 0xe6) : QColor(0x33, 0x33, 0x33));
    pen.setWidthF(2);
    line->setPen(pen);
    for (const auto& [n, ms] : c.ms) {
      if (n > right * 1.5 && n > 8) break;
      *line << QPointF(n, ms);
      top = std::max(top, ms);
      right = std::max(right, double(n));
    }
    chart->addSeries(line);
    attach(line, cost_x, cost_y);
  }
  for (const auto& r : runs) {
    if (!r.cost || r.tree_sizes.empty()) continue;
    const runs::StepCost& c = step_costs.at(r.target);
    auto* dots = new QScatterSeries;
    dots->setName(QObject::tr("%1's trees").arg(r.name));
    dots->setColor(colour(r));
    dots->setBorderColor(colour(r).darker(130));
    dots->setMarkerSize(9);
    for (int n : r.tree_sizes) {
      *dots << QPointF(n, c.at(n));
      top = std::max(top, c.at(n));
    }
    chart->addSeries(dots);
    attach(dots, cost_x, cost_y);
  }
  set_nice_range(cost_x, right);
  set_nice_range(cost_y, top * 1.05);
  chart->legend()->setVisible(!drawn.empty());

  // Beside each run's measured speedup, what the cost model expected and, when it loses, why.
  QString html;
  for (const auto& r : runs) {
    QString line = QStringLiteral("<b>%1</b>: ").arg(r.name.toHtmlEscaped());
    line += r.measured_speedup > 0 ? QObject::tr("measured %1x").arg(r.measured_speedup, 0, 'f', 2)
                                   : QObject::tr("measured speedup: no reference run");
    if (r.cost && !r.cost->steps.empty()) {
      line += QObject::tr(" · expected %1x (τ %2 per step; verify %3 ms for %4 tokens + draft %5 ms, against %6 ms "
                          "per vanilla token)")
                  .arg(r.cost->expected_speedup, 0, 'f', 2)
                  .arg(r.cost->tau, 0, 'f', 2)
                  .arg(r.cost->mean_verify_ms, 0, 'f', 2)
                  .arg(r.cost->mean_target_tokens, 0, 'f', 1)
                  .arg(r.cost->mean_draft_ms, 0, 'f', 2)
                  .arg(r.cost->cost1_ms, 0, 'f', 2);
      if (!r.cost->verdict.empty()) line += QStringLiteral("<br>") + QString::fromStdString(r.cost->verdict).toHtmlEscaped();
    } else {
      line += QObject::tr(" · expected: no step-cost curve for its target yet");
    }
    // Where a reasoning model's speculation pays: while it thinks or while it answers (always the whole run).
    if (const auto& p = r.reply_parts; p && (p->reasoning.steps > 0 || p->answer.steps > 0))
      line += QStringLiteral("<br>") + QObject::tr("Thinking: τ %1 over %2 tokens (%3 steps), %4 tok/s · answer: τ %5 "
                                                   "over %6 tokens (%7 steps), %8 tok/s")
                                           .arg(p->reasoning.tau, 0, 'f', 2)
                                           .arg(p->reasoning.tokens)
                                           .arg(p->reasoning.steps)
                                           .arg(p->reasoning.tokens_per_second, 0, 'f', 1)
                                           .arg(p->answer.tau, 0, 'f', 2)
                                           .arg(p->answer.tokens)
                                           .arg(p->answer.steps)
                                           .arg(p->answer.tokens_per_second, 0, 'f', 1);
    html += QStringLiteral("<p>%1</p>").arg(line);
  }
  cost_text->setText(runs.empty() ? QObject::tr("The cost model: run something to compare its expected and measured "
                                                "speedup.")
                                  : QObject::tr("<b>Cost model</b>%1 (expected speedup = τ ÷ ((verify + draft) ÷ "
                                                "cost(1)))")
                                            .arg(range_filtered ? QObject::tr(" over the selected steps") : QString()) +
                                        html);
}

}  // namespace specscope::ui
