#include "ui/inspector/colormap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace specscope::ui {

namespace {

// Cividis anchors: entries 0, 32, 64, ..., 224 and 255 of the 256-entry table `_cividis_data` in
// matplotlib's lib/matplotlib/_cm_listed.py (the published map of J. R. Nuñez, C. R. Anderton, R. S. Renslow,
// "Optimizing colormaps with consideration for color vision deficiency to enable accurate interpretation of
// scientific data", PLoS ONE 13(7): e0199239, 2018). Between anchors the colour is interpolated linearly in
// sRGB; the map is close to linear in lightness, so nine anchors reproduce it to within a few 1/255 steps.
struct Anchor {
  float t, r, g, b;
};
constexpr Anchor kCividis[] = {
    {0.0f / 255, 0.000000f, 0.135112f, 0.304751f},   {32.0f / 255, 0.103401f, 0.220406f, 0.435790f},
    {64.0f / 255, 0.263738f, 0.307831f, 0.422789f},  {96.0f / 255, 0.380830f, 0.395164f, 0.435653f},
    {128.0f / 255, 0.488697f, 0.485318f, 0.471008f}, {160.0f / 255, 0.609105f, 0.579816f, 0.463638f},
    {192.0f / 255, 0.736488f, 0.680629f, 0.424028f}, {224.0f / 255, 0.870717f, 0.789572f, 0.343333f},
    {255.0f / 255, 0.995737f, 0.909344f, 0.217772f},
};
constexpr int kAnchors = int(sizeof(kCividis) / sizeof(kCividis[0]));

float linearise(float c) { return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f); }

}  // namespace

Rgb cividis(float t) {
  if (std::isnan(t)) return no_value_grey();
  t = std::clamp(t, 0.0f, 1.0f);
  int i = 0;
  while (i + 2 < kAnchors && t > kCividis[i + 1].t) ++i;
  const Anchor& a = kCividis[i];
  const Anchor& b = kCividis[i + 1];
  const float u = std::clamp((t - a.t) / (b.t - a.t), 0.0f, 1.0f);
  return {a.r + (b.r - a.r) * u, a.g + (b.g - a.g) * u, a.b + (b.b - a.b) * u};
}

Rgb no_value_grey() { return {0.56f, 0.56f, 0.58f}; }

float relative_luminance(const Rgb& c) {
  return 0.2126f * linearise(c.r) + 0.7152f * linearise(c.g) + 0.0722f * linearise(c.b);
}

Rgb readable_text_on(const Rgb& bg) {
  // Contrast ratio (L1 + 0.05) / (L2 + 0.05) against black and against white; take the larger.
  const float l = relative_luminance(bg);
  const float vs_black = (l + 0.05f) / 0.05f;
  const float vs_white = 1.05f / (l + 0.05f);
  return vs_black >= vs_white ? Rgb{0.05f, 0.05f, 0.07f} : Rgb{1.0f, 1.0f, 1.0f};
}

uint32_t pack_abgr(const Rgb& c, float alpha) {
  auto byte = [](float v) { return uint32_t(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f)); };
  return (byte(alpha) << 24) | (byte(c.b) << 16) | (byte(c.g) << 8) | byte(c.r);
}

void to_hex(const Rgb& c, char out[8]) {
  auto byte = [](float v) { return int(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f)); };
  std::snprintf(out, 8, "#%02x%02x%02x", byte(c.r), byte(c.g), byte(c.b));
}

}  // namespace specscope::ui
