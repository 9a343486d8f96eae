#pragma once
// The app's two palettes, for the Fusion style: light is Fusion's own; dark sets every role in every colour
// group. Before (issue 18), the dark palette was set role by role with QPalette::setColor(role, colour), which
// gives the Disabled group the active colours: disabled buttons looked enabled. Here the Disabled group's
// texts are dimmed, and the text colour is the one the provenance tints were chosen for (token_text_color).
#include <QColor>
#include <QPalette>

namespace specscope::ui {

QPalette app_palette(bool dark);

// Presenter mode's theme, for a projector at the back of a room: black and white, with accept and reject in
// strong colours. Every colour here contrasts with the background by at least WCAG's 7:1 (AAA), which
// tests/ui/gui_presenter_test.cpp computes; the tree inspector draws with the same colours.
struct HighContrastColors {
  QColor background, text, dim, accepted, rejected, bonus, highlight, note;
};
const HighContrastColors& high_contrast_colors();
QPalette high_contrast_palette();

}  // namespace specscope::ui
