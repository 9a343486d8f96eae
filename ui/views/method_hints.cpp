#include "ui/views/method_hints.h"

#include <QStringList>

namespace specscope::ui {

QString options_to_text(const std::map<std::string, std::string>& options) {
  QStringList parts;
  for (const auto& [k, v] : options) parts << QString::fromStdString(k + "=" + v);
  return parts.join(' ');
}

std::map<std::string, std::string> options_from_text(const QString& text) {
  std::map<std::string, std::string> o;
  for (const QString& item : text.split(' ', Qt::SkipEmptyParts)) {
    const auto eq = item.indexOf('=');
    if (eq == 0) continue;
    // A bare key reads as key=1 (its value part is then "1").
    const QString key = eq < 0 ? item : item.left(eq), value = eq < 0 ? QStringLiteral("1") : item.mid(eq + 1);
    o.insert_or_assign(key.toStdString(), value.toStdString());
  }
  return o;
}

QString defaults_placeholder(const MethodInfo& info) {
  QStringList parts;
  for (const auto& o : info.options) {
    if (o.kind == OptionKind::Flag) continue;  // a flag's default is "off": nothing to show
    // No published number: the default is the model's own (streaming) or a shape (sps: a chain); the
    // tooltip's help says which.
    parts << QString::fromStdString(o.key + "=" + (o.default_value.empty() ? "(default)" : o.default_value));
  }
  return parts.join(' ');
}

QString options_tooltip(const MethodInfo& info) {
  QStringList lines;
  lines << QString::fromStdString(info.title + " — " + info.paper);
  for (const auto& o : info.options)
    lines << QString::fromStdString(o.key + (o.default_value.empty() ? "" : " (default " + o.default_value + ")") +
                                    ": " + o.help);
  if (info.options.empty()) lines << QStringLiteral("No options.");
  return lines.join('\n');
}

}  // namespace specscope::ui
