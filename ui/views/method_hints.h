#pragma once
// Method options as the forms show them, generated from the method registry (engine/methods/method_registry.h):
// "key=value key=value" text for one-line editors, the published defaults as a placeholder, and each option's
// help as a tooltip. Settings and the Compare tab's lane editor both use these, so neither keeps its own table.
#include <QString>
#include <map>
#include <string>

#include "engine/methods/method_registry.h"

namespace specscope::ui {

QString options_to_text(const std::map<std::string, std::string>& options);
// Whitespace-separated key=value items; a bare key is a flag (lossy-typical) and reads as key=1.
std::map<std::string, std::string> options_from_text(const QString& text);
// "total-tokens=60 depth=5 draft-top-k=10"; options without a published number read "gamma=(default)".
QString defaults_placeholder(const MethodInfo& info);
// One line per option: "depth (default 5): expansion levels after the root's children".
QString options_tooltip(const MethodInfo& info);

}  // namespace specscope::ui
