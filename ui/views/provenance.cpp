#include "ui/views/provenance.h"

#include <algorithm>
#include <cmath>

#include "ui/inspector/colormap.h"

namespace specscope::ui {

QColor accepted_color(int depth, bool dark) {
  // Light: pale to saturated blue with depth; dark: dim to bright. Depth 6+ shares the last shade.
  static const QColor light[] = {QColor(0xd6, 0xe8, 0xfa), QColor(0xb3, 0xd4, 0xf5), QColor(0x8e, 0xbf, 0xef),
                                 QColor(0x6a, 0xa9, 0xe6), QColor(0x4a, 0x92, 0xdc), QColor(0x2f, 0x7b, 0xcf)};
  // The dark ramp stops where light text still reads on it (it went on to 0x3b84d6: 3.1:1 with the text).
  static const QColor darkc[] = {QColor(0x1c, 0x31, 0x50), QColor(0x20, 0x3c, 0x64), QColor(0x24, 0x47, 0x78),
                                 QColor(0x28, 0x53, 0x8c), QColor(0x2b, 0x5c, 0x9c), QColor(0x2d, 0x62, 0xa6)};
  const int i = std::clamp(depth, 1, 6) - 1;
  return dark ? darkc[i] : light[i];
}

QColor bonus_color(bool dark) { return dark ? QColor(0x7a, 0x52, 0x00) : QColor(0xf6, 0xd5, 0x8e); }

QColor token_text_color(bool dark) { return dark ? QColor(0xe6, 0xe6, 0xe6) : QColor(0x00, 0x00, 0x00); }

double contrast_ratio(const QColor& a, const QColor& b) {
  const auto luminance = [](const QColor& c) {
    return double(relative_luminance({float(c.redF()), float(c.greenF()), float(c.blueF())}));
  };
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

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
