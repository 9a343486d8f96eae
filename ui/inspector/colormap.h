#pragma once
// A perceptual, colour-blind-safe scale for the inspector: cividis (Nuñez, Anderton & Renslow 2018), dark blue
// through grey to yellow, with lightness rising monotonically so that confidence reads the same with
// deuteranopia, protanopia or in greyscale. Qt-free and ImGui-free: the widget, the SVG export and the tests
// share it.
#include <cstdint>

namespace specscope::ui {

struct Rgb {
  float r = 0, g = 0, b = 0;  // each in [0, 1], sRGB (gamma-encoded)
};

// t in [0, 1] (clamped) -> cividis; NaN (no value) -> a neutral mid grey that is not on the scale.
Rgb cividis(float t);
Rgb no_value_grey();

// WCAG relative luminance of an sRGB colour (linearised), in [0, 1].
float relative_luminance(const Rgb& c);
// Black or white, whichever contrasts more with the background `bg`.
Rgb readable_text_on(const Rgb& bg);

// Packs as 0xAABBGGRR (ImGui's IM_COL32 layout) and as "#rrggbb" (SVG).
uint32_t pack_abgr(const Rgb& c, float alpha = 1.0f);
void to_hex(const Rgb& c, char out[8]);

}  // namespace specscope::ui
