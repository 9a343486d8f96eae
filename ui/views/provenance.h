#pragma once
// Colours that say where a token came from: an accepted draft token shaded by its depth in the tree, the
// bonus/correction token sampled from the target, or a token from a plain (no-draft) step. Background tints
// from a blue ramp (depth) and the Okabe-Ito orange (target), distinguishable with the common colour-vision
// deficiencies (blue vs orange). Each theme's tints are chosen for its own text colour (token_text_color):
// every pair contrasts by at least WCAG's 4.5:1 (tests/ui/gui_theme_test.cpp computes it).

#include <QColor>
#include <QString>

#include "engine/methods/step_record.h"

namespace specscope::ui {

QColor accepted_color(int depth, bool dark);  // depth >= 1
QColor bonus_color(bool dark);
// The text colour on those tints. Set explicitly on each coloured token: with the palette's text colour, a
// theme change turned the text of a light-theme answer white on its pale tints (issue 18).
QColor token_text_color(bool dark);
// WCAG 2 contrast ratio of two opaque colours, from 1 (the same) to 21 (black on white).
double contrast_ratio(const QColor& a, const QColor& b);
QString provenance_tooltip(const StepRecord& step, int node_id);  // node_id -1: the bonus token
// Whitespace made visible for token labels: "\n" -> "⏎", leading/trailing spaces -> "·".
QString visible_token(const std::string& text);

}  // namespace specscope::ui
