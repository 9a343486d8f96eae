#pragma once
// Colours that say where a token came from: an accepted draft token shaded by its depth in the tree, the
// bonus/correction token sampled from the target, or a token from a plain (no-draft) step. Background tints
// from a blue ramp (depth) and the Okabe-Ito orange (target), readable in light and dark themes and
// distinguishable with the common colour-vision deficiencies (blue vs orange).
#include <QColor>
#include <QString>

#include "engine/methods/step_record.h"

namespace specscope::ui {

QColor accepted_color(int depth, bool dark);  // depth >= 1
QColor bonus_color(bool dark);
QString provenance_tooltip(const StepRecord& step, int node_id);  // node_id -1: the bonus token
// Whitespace made visible for token labels: "\n" -> "⏎", leading/trailing spaces -> "·".
QString visible_token(const std::string& text);

}  // namespace specscope::ui
