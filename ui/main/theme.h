#pragma once
// The app's two palettes, for the Fusion style: light is Fusion's own; dark sets every role in every colour
// group. Before (issue 18), the dark palette was set role by role with QPalette::setColor(role, colour), which
// gives the Disabled group the active colours: disabled buttons looked enabled. Here the Disabled group's
// texts are dimmed, and the text colour is the one the provenance tints were chosen for (token_text_color).
#include <QPalette>

namespace specscope::ui {

QPalette app_palette(bool dark);

}  // namespace specscope::ui
