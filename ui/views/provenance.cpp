#include "ui/views/provenance.h"

#include <cmath>

namespace specscope::ui {

QColor accepted_color(int depth, bool dark) {
  // Light: pale to saturated blue with depth; dark: dim to bright. Depth 6+ shares the last shade.
  static const QColor light[] = {QColor(0xd6, 0xe8, 0xfa), QColor(0xb3, 0xd4, 0xf5), QColor(0x8e, 0xbf, 0xef),
                                 QColor(0x6a, 0xa9, 0xe6), QColor(0x4a, 0x92, 0xdc), QColor(0x2f, 0x7b, 0xcf)};
  static const QColor darkc[] = {QColor(0x1d, 0x35, 0x57), QColor(0x22, 0x44, 0x73), QColor(0x27, 0x54, 0x8f),
                                 QColor(0x2c, 0x64, 0xab), QColor(0x33, 0x74, 0xc2), QColor(0x3b, 0x84, 0xd6)};
  const int i = std::clamp(depth, 1, 6) - 1;
  return dark ? darkc[i] : light[i];
}

QColor bonus_color(bool dark) { return dark ? QColor(0x7a, 0x52, 0x00) : QColor(0xf6, 0xd5, 0x8e); }

static QString prob(float p) { return std::isnan(p) ? QStringLiteral("–") : QString::number(double(p), 'f', 3); }

QString provenance_tooltip(const StepRecord& s, int node_id) {
  if (node_id < 0)
    return QString("step %1 · %2 token from the %3 · p = %4")
        .arg(s.step)
        .arg(s.accepted_path.empty() ? "plain" : "bonus")
        .arg(s.bonus_source == BonusSource::Target ? "target" : "residual distribution")
        .arg(prob(s.bonus_prob));
  const DraftNode& n = s.nodes.at(size_t(node_id));
  return QString("step %1 · accepted draft at depth %2 (%3)\ndraft confidence %4 · target p %5 · token id %6")
      .arg(s.step)
      .arg(n.depth)
      .arg(to_string(n.source))
      .arg(prob(n.draft_prob))
      .arg(prob(n.target_prob))
      .arg(n.token);
}

QString visible_token(const std::string& text) {
  QString t = QString::fromStdString(text);
  t.replace('\n', QChar(0x23CE));
  t.replace('\t', QChar(0x21E5));
  int lead = 0;
  while (lead < t.size() && t[lead] == ' ') t[lead++] = QChar(0x00B7);
  for (int i = t.size() - 1; i >= lead && t[i] == ' '; --i) t[i] = QChar(0x00B7);
  return t;
}

}  // namespace specscope::ui
