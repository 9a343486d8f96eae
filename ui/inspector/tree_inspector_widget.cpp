#include "ui/inspector/tree_inspector_widget.h"

#include <imgui.h>

#include <QElapsedTimer>
#include <QEvent>
#include <QFile>
#include <QImage>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QWheelEvent>
#include <QMetaObject>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QPainter>
#include <QStandardPaths>
#include <QTimer>
#include <QSurfaceFormat>
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>

#include "imgui_impl_opengl3.h"
#include "engine/util/markup_escape.h"
#include "runs/cost_model.h"
#include "ui/inspector/colormap.h"
#include "ui/inspector/imgui_qt_input.h"
#include "ui/inspector/offscreen_gl.h"
#include "ui/inspector/timeline_view.h"
#include "ui/main/theme.h"
#include "ui/main/frame_budget.h"
#include "ui/inspector/tree_layout.h"

namespace specscope::ui {

namespace {

// ---------------------------------------------------------------------------------------------------------
// Geometry and theme

// Pixels per layout unit at zoom 1: a column per depth, a row per sibling slot.
constexpr float kColPx = 150.0f, kRowPx = 30.0f;
constexpr float kCompactColPx = 30.0f, kCompactRowPx = 10.0f;
constexpr float kUiFontPx = 14.0f;     // ImGui text (header, tooltips, legend)
constexpr float kNodeFontPx = 13.0f;   // token labels at zoom 1
constexpr float kEdgeFontPx = 10.5f;   // edge probabilities at zoom 1
constexpr float kTagFontPx = 10.0f;    // "root" / "bonus" tags at zoom 1
constexpr float kTimelineH = 58.0f;
constexpr float kLegendH = 22.0f;

LayoutParams layoutParams(bool compact) {
  LayoutParams p;
  p.box_width = compact ? 0.70f : 0.62f;   // 93 px of 150
  p.box_height = compact ? 0.70f : 0.76f;  // 23 px of 30
  return p;
}

struct Col {
  Rgb c;
  float a = 1.0f;
  ImU32 u32() const { return pack_abgr(c, a); }
  ImU32 u32(float alpha) const { return pack_abgr(c, a * alpha); }
};

Rgb hex(uint32_t rgb) {
  return {float((rgb >> 16) & 0xFF) / 255.0f, float((rgb >> 8) & 0xFF) / 255.0f, float(rgb & 0xFF) / 255.0f};
}

Rgb mix(const Rgb& a, const Rgb& b, float t) {  // a*(1-t) + b*t
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

struct Theme {
  Rgb bg, canvas, text, dim, edge, edge_path, accepted, rejected, not_reached, pruned, bonus, root_fill,
      root_outline, bar, bar_current, hover;
};

Rgb rgb(const QColor& c) { return {float(c.redF()), float(c.greenF()), float(c.blueF())}; }

// Presenter mode's: ui/main/theme.h's high-contrast colours (7:1 or more on black), so the app and the tree agree.
const Theme& highContrastTheme() {
  static const Theme kContrast = [] {
    const HighContrastColors& c = high_contrast_colors();
    return Theme{rgb(c.background), rgb(c.background), rgb(c.text),     rgb(c.dim),      rgb(c.dim),
                 rgb(c.accepted),   rgb(c.accepted),   rgb(c.rejected), rgb(c.dim),      rgb(c.dim),
                 rgb(c.bonus),      hex(0x303030),     rgb(c.text),     rgb(c.note),     rgb(c.highlight),
                 rgb(c.text)};
  }();
  return kContrast;
}

const Theme& theme(bool dark, bool contrast = false) {
  if (contrast) return highContrastTheme();
  static const Theme kDark{hex(0x1b1d22), hex(0x22252d), hex(0xe4e6ea), hex(0x9aa1ad), hex(0x646b78),
                           hex(0x57c98e), hex(0x4fd08a), hex(0xff5d5d), hex(0x8b919c), hex(0x7b818c),
                           hex(0xd68cf2), hex(0x3b3f4b), hex(0xb3b9c4), hex(0x4f6386), hex(0xffc94a),
                           hex(0xffffff)};
  static const Theme kLight{hex(0xf2f3f5), hex(0xffffff), hex(0x1c1f25), hex(0x5d6470), hex(0xa6abb4),
                            hex(0x1f9d55), hex(0x1a9950), hex(0xd42a3c), hex(0x8c929b), hex(0x9aa0a8),
                            hex(0x9237b8), hex(0xe2e4e9), hex(0x687080), hex(0x97a9c7), hex(0xe39a00),
                            hex(0x000000)};
  return dark ? kDark : kLight;
}

// How one box looks; shared by the ImGui renderer and the SVG writer so they agree.
enum class Badge { None, Check, Cross, Diamond };
struct NodeStyle {
  Rgb fill, outline, text;
  float outline_width = 1.0f;
  bool dashed = false, hatched = false, strike = false, double_outline = false;
  Badge badge = Badge::None;
  const char* tag = nullptr;  // "root" / "bonus" drawn above the box
};

NodeStyle styleFor(const Theme& th, const StepRecord& step, const LayoutItem& li) {
  NodeStyle s;
  if (li.kind == LayoutKind::Root) {
    s.fill = th.root_fill;
    s.outline = th.root_outline;
    s.outline_width = 1.5f;
    s.tag = "root";
  } else if (li.kind == LayoutKind::Bonus) {
    s.fill = cividis(step.bonus_prob);
    s.outline = th.bonus;
    s.outline_width = 2.0f;
    s.double_outline = true;
    s.badge = Badge::Diamond;
    s.tag = "bonus";
  } else {
    const DraftNode& n = step.nodes[size_t(li.node)];
    const Rgb conf = cividis(n.draft_prob);
    const NodeDecision d = n.pruned ? NodeDecision::Pruned : n.decision;
    switch (d) {
      case NodeDecision::Accepted:
        s.fill = conf, s.outline = th.accepted, s.outline_width = 3.0f, s.badge = Badge::Check;
        break;
      case NodeDecision::Rejected:
        s.fill = conf, s.outline = th.rejected, s.outline_width = 2.5f, s.badge = Badge::Cross;
        break;
      case NodeDecision::NotReached:  // faded: blended halfway into the canvas
        s.fill = mix(conf, th.canvas, 0.45f), s.outline = th.not_reached, s.outline_width = 1.5f, s.dashed = true;
        break;
      case NodeDecision::Pruned:
        s.fill = mix(conf, th.canvas, 0.65f), s.outline = th.pruned, s.outline_width = 1.2f, s.dashed = true;
        s.hatched = true, s.strike = true;
        break;
    }
  }
  s.text = readable_text_on(s.fill);
  return s;
}

std::string fmtProb(float p, const char* fmt = "%.2f") {
  if (std::isnan(p)) return "\xE2\x80\x94";  // —
  if (fmt[2] == '2' && p > 0.0f && p < 0.005f) return "<.01";  // edge labels: not a misleading 0.00
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, double(p));
  return buf;
}

// The root's text: the previous step's bonus when it is this step's root token, else its id.
std::string rootText(const std::vector<StepRecord>& steps, int index, bool unicode) {
  const StepRecord& s = steps[size_t(index)];
  if (s.root_token < 0) return "prefill";
  if (index > 0) {
    const StepRecord& prev = steps[size_t(index - 1)];
    if (prev.bonus_token == s.root_token && !prev.bonus_text.empty()) return display_token(prev.bonus_text, 24, unicode);
    if (!prev.committed.empty() && prev.committed.back() == s.root_token && prev.bonus_token == s.root_token)
      return display_token(prev.bonus_text, 24, unicode);
  }
  return std::string("#").append(std::to_string(s.root_token));
}

std::string itemLabel(const std::vector<StepRecord>& steps, int index, const LayoutItem& li, bool unicode) {
  const StepRecord& s = steps[size_t(index)];
  switch (li.kind) {
    case LayoutKind::Root: return rootText(steps, index, unicode);
    case LayoutKind::Bonus: return display_token(s.bonus_text, 24, unicode);
    case LayoutKind::Draft: return display_token(s.nodes[size_t(li.node)].text, 24, unicode);
  }
  return {};
}

// ---------------------------------------------------------------------------------------------------------
// Fonts: DejaVu Sans (has ⏎ ⇥ ↵ · … ∅) when installed, else ImGui's built-in font with ASCII escapes.

const std::vector<char>& fontFile() {
  static const std::vector<char> data = [] {
    QStringList candidates;
    const QByteArray env = qgetenv("SPECSCOPE_INSPECTOR_FONT");
    if (!env.isEmpty()) candidates << QString::fromLocal8Bit(env);
    candidates << "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf" << "/usr/share/fonts/TTF/DejaVuSans.ttf"
               << "/usr/share/fonts/dejavu/DejaVuSans.ttf" << "/usr/local/share/fonts/DejaVuSans.ttf"
               << "/Library/Fonts/DejaVuSans.ttf";
    for (const QString& dir : QStandardPaths::standardLocations(QStandardPaths::FontsLocation))
      candidates << dir + "/DejaVuSans.ttf" << dir + "/dejavu/DejaVuSans.ttf";
    for (const QString& path : candidates) {
      QFile f(path);
      if (f.open(QIODevice::ReadOnly)) {
        const QByteArray bytes = f.readAll();
        if (bytes.size() > 1024) return std::vector<char>(bytes.begin(), bytes.end());
      }
    }
    return std::vector<char>{};
  }();
  return data;
}

// Code points > U+00FF in `text` that the static glyph ranges below do not cover.
void collectGlyphs(const std::string& text, std::set<ImWchar>& out) {
  for (size_t i = 0; i < text.size();) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    unsigned cp = 0;
    int len = 1;
    if (b < 0x80) cp = b;
    else if ((b & 0xE0) == 0xC0) cp = b & 0x1F, len = 2;
    else if ((b & 0xF0) == 0xE0) cp = b & 0x0F, len = 3;
    else if ((b & 0xF8) == 0xF0) cp = b & 0x07, len = 4;
    else { ++i; continue; }
    if (i + size_t(len) > text.size()) break;
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + size_t(k)]) & 0x3F);
    i += size_t(len);
    const bool covered = cp < 0x0250 || (cp >= 0x0370 && cp < 0x0530) || (cp >= 0x2000 && cp < 0x2400) ||
                         (cp >= 0x2500 && cp < 0x2600) || (cp >= 0x2700 && cp < 0x27C0);
    if (!covered && cp <= 0xFFFF) out.insert(ImWchar(cp));
  }
}

// ---------------------------------------------------------------------------------------------------------
// Drawing helpers

ImVec2 operator+(ImVec2 a, ImVec2 b) { return {a.x + b.x, a.y + b.y}; }
ImVec2 operator-(ImVec2 a, ImVec2 b) { return {a.x - b.x, a.y - b.y}; }
ImVec2 operator*(ImVec2 a, float k) { return {a.x * k, a.y * k}; }

void dashedPolyline(ImDrawList* dl, const ImVec2* pts, int count, ImU32 col, float thickness, float dash, float gap) {
  float phase = 0;  // distance into the current dash+gap period
  for (int i = 0; i + 1 < count; ++i) {
    const ImVec2 a = pts[i], b = pts[i + 1];
    const float len = std::hypot(b.x - a.x, b.y - a.y);
    float t = 0;
    while (t < len) {
      const bool on = phase < dash;
      const float step = std::min(len - t, on ? dash - phase : dash + gap - phase);
      if (on) {
        const ImVec2 p0 = a + (b - a) * (t / len), p1 = a + (b - a) * ((t + step) / len);
        dl->AddLine(p0, p1, col, thickness);
      }
      t += step;
      phase += step;
      if (phase >= dash + gap) phase = 0;
    }
  }
}

void dashedRect(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 col, float thickness) {
  const ImVec2 pts[5] = {a, {b.x, a.y}, b, {a.x, b.y}, a};
  dashedPolyline(dl, pts, 5, col, thickness, 5.0f, 3.5f);
}

ImVec2 bezier(ImVec2 p0, ImVec2 p1, ImVec2 p2, ImVec2 p3, float t) {
  const float u = 1 - t;
  return p0 * (u * u * u) + p1 * (3 * u * u * t) + p2 * (3 * u * t * t) + p3 * (t * t * t);
}

void drawBadge(ImDrawList* dl, Badge badge, ImVec2 centre, float r, ImU32 col, ImU32 mark) {
  switch (badge) {
    case Badge::None: return;
    case Badge::Check: {
      dl->AddCircleFilled(centre, r, col, 16);
      const ImVec2 pts[3] = {centre + ImVec2(-0.5f * r, 0.0f), centre + ImVec2(-0.12f * r, 0.42f * r),
                             centre + ImVec2(0.52f * r, -0.38f * r)};
      dl->AddPolyline(pts, 3, mark, 0, std::max(1.2f, 0.3f * r));
      return;
    }
    case Badge::Cross: {
      dl->AddCircleFilled(centre, r, col, 16);
      const float k = 0.42f * r, w = std::max(1.2f, 0.28f * r);
      dl->AddLine(centre + ImVec2(-k, -k), centre + ImVec2(k, k), mark, w);
      dl->AddLine(centre + ImVec2(-k, k), centre + ImVec2(k, -k), mark, w);
      return;
    }
    case Badge::Diamond: {
      const float k = 1.15f * r;
      dl->AddQuadFilled(centre + ImVec2(0, -k), centre + ImVec2(k, 0), centre + ImVec2(0, k), centre + ImVec2(-k, 0), col);
      return;
    }
  }
}

// One node box in screen space. `zoomed` scales the decorations with the view.
void drawBox(ImDrawList* dl, const NodeStyle& st, ImVec2 a, ImVec2 b, float zoom, const Theme& th, bool hovered,
             bool compact) {
  const float h = b.y - a.y;
  const float rounding = std::min(5.0f * zoom, 0.3f * h);
  dl->AddRectFilled(a, b, pack_abgr(st.fill), rounding);
  if (compact) {  // miniature: fill and a thin outline in the decision's colour, nothing finer
    dl->AddRect(a, b, pack_abgr(st.outline, st.dashed ? 0.6f : 1.0f), rounding, 0, st.outline_width >= 2.0f ? 1.5f : 1.0f);
    return;
  }
  if (st.hatched) {
    dl->PushClipRect(a, b, true);
    const float spacing = std::max(3.0f, 6.0f * zoom);
    const ImU32 hc = pack_abgr(st.outline, 0.55f);
    for (float x = a.x - h; x < b.x; x += spacing) dl->AddLine({x, b.y}, {x + h, a.y}, hc, 1.0f);
    dl->PopClipRect();
  }
  const float w = std::max(1.0f, st.outline_width * std::clamp(zoom, 0.75f, 1.3f));
  if (st.dashed) dashedRect(dl, a, b, pack_abgr(st.outline), w);
  else dl->AddRect(a, b, pack_abgr(st.outline), rounding, 0, w);
  if (st.double_outline) {
    const float g = std::max(2.0f, 3.0f * zoom) + w;
    dl->AddRect(a - ImVec2(g, g), b + ImVec2(g, g), pack_abgr(st.outline), rounding + g, 0, std::max(1.0f, w * 0.6f));
  }
  if (hovered) {
    const float g = 2.5f;
    dl->AddRect(a - ImVec2(g, g), b + ImVec2(g, g), pack_abgr(th.hover, 0.9f), rounding + g, 0, 1.5f);
  }
  if (st.badge != Badge::None) {
    const float r = std::clamp(0.26f * h, 3.0f, 9.0f);
    drawBadge(dl, st.badge, ImVec2(b.x - 1.0f, a.y + 1.0f), r, pack_abgr(st.outline), pack_abgr(hex(0xffffff)));
  }
}

// Text cut with "…" so that it fits max_w at `size`.
std::string fitText(ImFont* font, float size, const std::string& s, float max_w, bool unicode) {
  if (font->CalcTextSizeA(size, FLT_MAX, 0.0f, s.c_str()).x <= max_w) return s;
  const std::string ell = unicode ? "\xE2\x80\xA6" : "..";
  std::string cut = s;
  while (!cut.empty()) {
    size_t k = cut.size() - 1;  // drop one UTF-8 code point
    while (k > 0 && (static_cast<unsigned char>(cut[k]) & 0xC0) == 0x80) --k;
    cut.resize(k);
    const std::string t = cut + ell;
    if (font->CalcTextSizeA(size, FLT_MAX, 0.0f, t.c_str()).x <= max_w) return t;
  }
  return {};
}

// ---------------------------------------------------------------------------------------------------------
// SVG

std::string svgColor(const Rgb& c) {
  char buf[8];
  to_hex(c, buf);
  return buf;
}

}  // namespace

// =========================================================================================================

struct TreeInspectorWidget::State {
  ImGuiContext* ctx = nullptr;
  runs::StepCost step_cost;  // the cost model's curve (empty: none)
  // Live steps arrive faster than anyone can read them; each frame costs CPU that the decoder needs (with
  // software OpenGL it is rasterized on the same cores). New steps therefore repaint at most live_fps times
  // a second; input still repaints at once.
  QTimer* live_timer = nullptr;
  QElapsedTimer since_paint;
  int live_fps = 20;  // below the main window's 15 Hz frame clock, so its batches repaint at once
  ImGuiQtInput input;
  bool backendReady = false;
  bool glFailed = false;
  OffscreenGl gl;       // frames are drawn off screen and painted as this image (see offscreen_gl.h)
  QImage image;         // the last frame, in device pixels
  bool frameWanted = true;  // the view changed since `image` was drawn

  std::vector<StepRecord> steps;
  int current = -1;
  // The selected draft node (the "why" panel's), with the step and generation it belongs to: it is shown only
  // while that step is.
  int selectedIndex = -1, selectedNode = -1;
  unsigned selectedGeneration = ~0u;
  // Where the last frame drew each layout item (logical pixels) and half a box, for clicks and tests.
  std::vector<ImVec2> hitCentres;
  ImVec2 hitHalf{0, 0};
  QPoint pressAt{-1, -1};
  bool follow = true;
  int recordedLast = -1;  // replay: the recorded run's last step number; -1 live (the newest step is the last)
  bool dark = true;
  bool highContrast = false;  // presenter mode
  float fontScale = 1.0f;     // presenter mode's large fonts (header, legend, timeline, tooltips)
  bool compact = false;
  // The step timeline (timeline_view.h): its window and selection, where its bars were drawn in the last frame
  // (logical pixels), and the drag in progress.
  TimelineView timeline;
  float tlX0 = 0, tlX1 = 0, tlY0 = 0, tlY1 = 0;
  enum class TimelineDrag { None, Scrub, Pan, Select } tlDrag = TimelineDrag::None;
  double tlLastX = 0;
  int tlAnchor = -1;
  bool tlMoved = false;
  SessionNotes notes;  // the session's notes; those on the shown step go in the header
  unsigned generation = 0;  // bumps when steps are replaced (layout cache key)

  TreeLayout layout;
  int layoutStep = -1;
  unsigned layoutGeneration = ~0u;
  bool layoutCompact = false;

  // View: screen = canvas origin + pan + (x * colPx, y * rowPx) * zoom.
  float zoom = 1.0f;
  ImVec2 pan{0, 0};
  bool userView = false;    // the user panned or zoomed: do not refit on new steps
  bool fitPending = true;
  int fittedStep = -1;
  unsigned fittedGeneration = ~0u;
  ImVec2 fittedCanvas{0, 0};
  float colStretch = 1.0f;  // compact only: columns widened to use spare width

  ImVec2 canvasMin{0, 0}, canvasMax{0, 0};  // last frame's canvas, in logical pixels

  int nodesDrawn = 0;
  long long frames = 0;
  QElapsedTimer clock;
  double lastTime = 0;
  int trailing = 0;

  // Fonts.
  qreal fontDpr = 0;
  bool fontDirty = true;
  bool unicode = false;  // the loaded font has the whitespace symbols
  ImFont* font = nullptr;
  ImVector<ImWchar> ranges;
  std::set<ImWchar> extraGlyphs;
};

TreeInspectorWidget::TreeInspectorWidget(QWidget* parent) : QWidget(parent), s_(std::make_unique<State>()) {
  setAttribute(Qt::WA_OpaquePaintEvent);  // every pixel comes from the frame's image
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumSize(60, 40);
  s_->clock.start();
  s_->since_paint.start();
  s_->live_timer = new QTimer(this);
  s_->live_timer->setSingleShot(true);
  connect(s_->live_timer, &QTimer::timeout, this, [this] { requestFrame(); });
  ImGuiContext* previous = ImGui::GetCurrentContext();
  s_->ctx = ImGui::CreateContext();
  ImGui::SetCurrentContext(s_->ctx);
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.LogFilename = nullptr;
  io.ConfigWindowsMoveFromTitleBarOnly = true;
  ImGuiQtInput::setupIo(io);
  ImGui::StyleColorsDark();
  ImGui::SetCurrentContext(previous);
}

TreeInspectorWidget::~TreeInspectorWidget() {
  if (s_->backendReady && s_->gl.makeCurrent()) {
    ImGui::SetCurrentContext(s_->ctx);
    ImGui_ImplOpenGL3_Shutdown();
    s_->backendReady = false;
    s_->gl.doneCurrent();
  }
  if (ImGui::GetCurrentContext() == s_->ctx) ImGui::SetCurrentContext(nullptr);
  ImGui::DestroyContext(s_->ctx);
}

void TreeInspectorWidget::requestFrame() {
  s_->frameWanted = true;
  update();
}

// ---------------------------------------------------------------------------------------------------------
// Data

void TreeInspectorWidget::clear() {
  const bool hadSelection = s_->timeline.hasSelection();
  s_->timeline = TimelineView{};
  s_->tlDrag = State::TimelineDrag::None;
  s_->steps.clear();
  s_->current = -1;
  s_->follow = true;
  ++s_->generation;
  s_->userView = false;
  s_->fitPending = true;
  requestFrame();
  emit currentStepChanged(-1);
  if (hadSelection) emit rangeSelected(-1, -1);
}

void TreeInspectorWidget::appendStep(const StepRecord& step) {
  State& s = *s_;
  s.steps.push_back(step);
  s.timeline.setStepCount(int(s.steps.size()));  // a zoomed timeline keeps its zoom as live steps arrive
  const size_t before = s.extraGlyphs.size();
  if (s.extraGlyphs.size() < 2000) {
    for (const auto& n : step.nodes) collectGlyphs(n.text, s.extraGlyphs);
    collectGlyphs(step.bonus_text, s.extraGlyphs);
  }
  if (s.extraGlyphs.size() != before) s.fontDirty = true;
  if (s.follow) {
    s.current = int(s.steps.size()) - 1;
    emit currentStepChanged(s.current);
  }
  const qint64 interval = s.live_fps > 0 ? 1000 / s.live_fps : 0;
  const qint64 since = s.since_paint.elapsed();
  if (since >= interval) requestFrame();
  else if (!s.live_timer->isActive()) s.live_timer->start(int(interval - since));
}

void TreeInspectorWidget::setLiveFrameRateLimit(int fps) { s_->live_fps = fps; }

void TreeInspectorWidget::setSteps(std::vector<StepRecord> steps) {
  State& s = *s_;
  s.steps = std::move(steps);
  const bool hadSelection = s.timeline.hasSelection();
  s.timeline = TimelineView{};
  s.timeline.setStepCount(int(s.steps.size()));
  s.tlDrag = State::TimelineDrag::None;
  ++s.generation;
  const size_t before = s.extraGlyphs.size();
  for (const auto& st : s.steps) {
    if (s.extraGlyphs.size() >= 2000) break;
    for (const auto& n : st.nodes) collectGlyphs(n.text, s.extraGlyphs);
    collectGlyphs(st.bonus_text, s.extraGlyphs);
  }
  if (s.extraGlyphs.size() != before) s.fontDirty = true;
  s.current = int(s.steps.size()) - 1;
  s.follow = true;
  s.userView = false;
  s.fitPending = true;
  requestFrame();
  emit currentStepChanged(s.current);
  if (hadSelection) emit rangeSelected(-1, -1);
}

void TreeInspectorWidget::setCurrentStep(int index) {
  State& s = *s_;
  if (s.steps.empty()) return;
  index = std::clamp(index, 0, int(s.steps.size()) - 1);
  s.follow = index == int(s.steps.size()) - 1;
  if (index == s.current) return;
  s.current = index;
  requestFrame();
  emit currentStepChanged(index);
}

int TreeInspectorWidget::currentStep() const { return s_->current; }

const StepRecord* TreeInspectorWidget::currentRecord() const {
  const State& s = *s_;
  return s.current >= 0 && s.current < int(s.steps.size()) ? &s.steps[size_t(s.current)] : nullptr;
}

int TreeInspectorWidget::selectedNode() const {
  const State& s = *s_;
  return s.selectedIndex == s.current && s.selectedGeneration == s.generation ? s.selectedNode : -1;
}

void TreeInspectorWidget::selectNode(int node) {
  State& s = *s_;
  const StepRecord* step = currentRecord();
  if (!step || node < 0 || node >= int(step->nodes.size())) node = -1;
  if (node >= 0) s.follow = false;  // keep the step on screen while live steps arrive, as scrubbing does
  s.selectedIndex = s.current;
  s.selectedNode = node;
  s.selectedGeneration = s.generation;
  requestFrame();
  emit nodeSelected(s.current, node);
}

QPoint TreeInspectorWidget::nodePosition(int node) const {
  const State& s = *s_;
  if (s.layoutStep != s.current || node < 0 || node >= int(s.layout.item_of_node.size())) return {-1, -1};
  const int item = s.layout.item_of_node[size_t(node)];
  if (item < 0 || item >= int(s.hitCentres.size())) return {-1, -1};
  return QPointF(s.hitCentres[size_t(item)].x, s.hitCentres[size_t(item)].y).toPoint();
}

int TreeInspectorWidget::nodeAt(QPointF pos) const {
  const State& s = *s_;
  if (s.layoutStep != s.current) return -1;
  for (size_t i = 0; i < s.hitCentres.size() && i < s.layout.items.size(); ++i) {
    const LayoutItem& li = s.layout.items[i];
    if (li.kind == LayoutKind::Draft && std::fabs(float(pos.x()) - s.hitCentres[i].x) <= s.hitHalf.x &&
        std::fabs(float(pos.y()) - s.hitCentres[i].y) <= s.hitHalf.y)
      return li.node;
  }
  return -1;
}

void TreeInspectorWidget::setRecordedLastStep(int step) {
  s_->recordedLast = step;
  requestFrame();
}

// Step numbers are the StepRecord's own (0: the prefill), as in the chat's tooltips and the timeline's.
QString TreeInspectorWidget::headerTitle() const {
  const State& s = *s_;
  if (s.current < 0 || s.current >= int(s.steps.size())) return {};
  const int last = s.recordedLast >= 0 ? s.recordedLast : s.steps.back().step;
  return QString("Step %1 / %2").arg(s.steps[size_t(s.current)].step).arg(last);
}

void TreeInspectorWidget::setStepCost(const runs::StepCost& cost) {
  s_->step_cost = cost;
  requestFrame();
}

QString TreeInspectorWidget::stepCostText() const {
  const State& s = *s_;
  if (s.step_cost.ms.empty() || s.current < 0 || s.current >= int(s.steps.size())) return {};
  const StepRecord& st = s.steps[size_t(s.current)];
  if (st.root_token < 0) return {};  // the prefill: no tokens of its own to compare
  return QString::fromStdString(runs::describe_step(runs::step_breakdown(st, s.step_cost)));
}

bool TreeInspectorWidget::liveShown() const { return s_->follow && s_->recordedLast < 0; }
int TreeInspectorWidget::stepCount() const { return int(s_->steps.size()); }
bool TreeInspectorWidget::followsLive() const { return s_->follow; }

void TreeInspectorWidget::setFollowLive(bool follow) {
  State& s = *s_;
  s.follow = follow;
  if (follow && !s.steps.empty() && s.current != int(s.steps.size()) - 1) {
    s.current = int(s.steps.size()) - 1;
    emit currentStepChanged(s.current);
  }
  requestFrame();
}

void TreeInspectorWidget::fitView() {
  s_->userView = false;
  s_->fitPending = true;
  requestFrame();
}

void TreeInspectorWidget::setDarkTheme(bool dark) {
  if (s_->dark == dark) return;
  s_->dark = dark;
  ImGuiContext* previous = ImGui::GetCurrentContext();
  ImGui::SetCurrentContext(s_->ctx);
  if (dark) ImGui::StyleColorsDark();
  else ImGui::StyleColorsLight();
  ImGui::SetCurrentContext(previous);
  requestFrame();
}

void TreeInspectorWidget::setCompact(bool compact) {
  if (s_->compact == compact) return;
  s_->compact = compact;
  s_->fontDirty = true;
  setFocusPolicy(compact ? Qt::NoFocus : Qt::StrongFocus);
  s_->userView = false;
  s_->fitPending = true;
  updateGeometry();
  requestFrame();
}

void TreeInspectorWidget::setHighContrast(bool on) {
  if (s_->highContrast == on) return;
  s_->highContrast = on;
  ImGuiContext* previous = ImGui::GetCurrentContext();
  ImGui::SetCurrentContext(s_->ctx);
  if (on || s_->dark) ImGui::StyleColorsDark();
  else ImGui::StyleColorsLight();
  if (on) {  // tooltips and buttons in black and white too
    ImGuiStyle& st = ImGui::GetStyle();
    const HighContrastColors& c = high_contrast_colors();
    st.Colors[ImGuiCol_Text] = ImVec4(1, 1, 1, 1);
    st.Colors[ImGuiCol_PopupBg] = ImVec4(0, 0, 0, 1);
    st.Colors[ImGuiCol_Border] = ImVec4(1, 1, 1, 1);
    st.Colors[ImGuiCol_Button] = ImVec4(0.16f, 0.16f, 0.16f, 1);
    st.Colors[ImGuiCol_ButtonHovered] = ImVec4(float(c.note.redF()), float(c.note.greenF()), float(c.note.blueF()), 0.45f);
    st.PopupBorderSize = 1.0f;
  }
  ImGui::SetCurrentContext(previous);
  requestFrame();
}

bool TreeInspectorWidget::highContrast() const { return s_->highContrast; }

void TreeInspectorWidget::setFontScale(float scale) {
  scale = std::clamp(scale, 0.5f, 4.0f);
  if (s_->fontScale == scale) return;
  s_->fontScale = scale;
  s_->fontDirty = true;
  requestFrame();
}

float TreeInspectorWidget::uiFontPixels() const { return std::round(kUiFontPx * s_->fontScale); }

void TreeInspectorWidget::setNotes(const SessionNotes& notes) {
  s_->notes = notes;
  requestFrame();
}

QString TreeInspectorWidget::currentNote() const {
  const StepRecord* st = currentRecord();
  return st ? QString::fromStdString(s_->notes.for_step(st->step)) : QString();
}

std::pair<int, int> TreeInspectorWidget::selectedRange() const {
  return {s_->timeline.selectionFirst(), s_->timeline.selectionLast()};
}

void TreeInspectorWidget::setSelectedRange(int first, int last) {
  if (first < 0 || last < 0) s_->timeline.clearSelection();
  else s_->timeline.select(first, last);
  requestFrame();
}

double TreeInspectorWidget::timelineFirst() const { return s_->timeline.first(); }
double TreeInspectorWidget::timelineSpan() const { return s_->timeline.span(); }
bool TreeInspectorWidget::timelineZoomed() const { return s_->timeline.zoomed(); }

void TreeInspectorWidget::showAllSteps() {
  s_->timeline.showAll();
  requestFrame();
}

QRect TreeInspectorWidget::timelineBars() const {
  const State& s = *s_;
  if (s.tlX1 <= s.tlX0) return {};
  return QRectF(QPointF(s.tlX0, s.tlY0), QPointF(s.tlX1, s.tlY1)).toAlignedRect();
}

QPoint TreeInspectorWidget::timelineBarPosition(int index) const {
  const State& s = *s_;
  if (s.tlX1 <= s.tlX0 || index < 0 || index >= int(s.steps.size())) return {-1, -1};
  const double a = s.timeline.xOf(index, s.tlX0, s.tlX1), b = s.timeline.xOf(index + 1, s.tlX0, s.tlX1);
  const double x = 0.5 * (a + b);
  if (x < s.tlX0 || x > s.tlX1) return {-1, -1};
  return QPointF(x, 0.5 * (s.tlY0 + s.tlY1)).toPoint();
}

void TreeInspectorWidget::endSelection(int first, int last) {
  State& s = *s_;
  if (first < 0) s.timeline.clearSelection();
  else s.timeline.select(first, last);
  requestFrame();
  emit rangeSelected(s.timeline.selectionFirst(), s.timeline.selectionLast());
}

// The timeline's own input, handled from Qt's events (not ImGui's frame) so that a drag or a wheel turn acts at
// once, whatever the frame rate: wheel zooms about the cursor; a left drag scrubs (everything shown) or pans
// (zoomed); a shift-drag or right-drag selects steps; a double-click clears the selection, else shows every step;
// Escape clears the selection.
bool TreeInspectorWidget::timelineEvent(QEvent* e) {
  State& s = *s_;
  using Drag = State::TimelineDrag;
  const int n = int(s.steps.size());
  auto inside = [&](QPointF p) {
    return s.tlX1 > s.tlX0 && p.x() >= s.tlX0 - 4 && p.x() <= s.tlX1 + 4 && p.y() >= s.tlY0 && p.y() <= s.tlY1;
  };
  auto indexAt = [&](double x) { return s.timeline.indexAt(x, s.tlX0, s.tlX1); };
  switch (e->type()) {
    case QEvent::ShortcutOverride:
    case QEvent::KeyPress: {
      // Escape is also Run > Stop: while steps are selected, the timeline takes it first.
      auto* k = static_cast<QKeyEvent*>(e);
      if (k->key() != Qt::Key_Escape || !s.timeline.hasSelection()) return false;
      e->accept();
      if (e->type() == QEvent::KeyPress) endSelection(-1, -1);
      return true;
    }
    case QEvent::Wheel: {
      auto* w = static_cast<QWheelEvent*>(e);
      if (n == 0 || !inside(w->position())) return false;
      s.timeline.zoomAt(w->position().x(), w->angleDelta().y() / 120.0, s.tlX0, s.tlX1);
      requestFrame();
      e->accept();
      return true;
    }
    case QEvent::MouseButtonDblClick: {
      auto* m = static_cast<QMouseEvent*>(e);
      if (n == 0 || !inside(m->position())) return false;
      s.tlDrag = Drag::None;
      if (s.timeline.hasSelection()) endSelection(-1, -1);
      else s.timeline.showAll();
      requestFrame();
      return true;
    }
    case QEvent::MouseButtonPress: {
      auto* m = static_cast<QMouseEvent*>(e);
      if (n == 0 || !inside(m->position()) || (m->button() != Qt::LeftButton && m->button() != Qt::RightButton))
        return false;
      const double x = m->position().x();
      s.tlLastX = x;
      s.tlMoved = false;
      s.tlAnchor = indexAt(x);
      if (m->button() == Qt::RightButton || (m->modifiers() & Qt::ShiftModifier)) {
        s.tlDrag = Drag::Select;
      } else if (s.timeline.zoomed()) {
        s.tlDrag = Drag::Pan;
      } else {
        s.tlDrag = Drag::Scrub;
        moveTo(s.tlAnchor, s.tlAnchor == n - 1, false);
      }
      requestFrame();
      return false;  // ImGui sees the press too (hover state, tooltips)
    }
    case QEvent::MouseMove: {
      auto* m = static_cast<QMouseEvent*>(e);
      if (s.tlDrag == Drag::None || n == 0) return false;
      const double x = m->position().x();
      if (std::fabs(x - s.tlLastX) < 0.5 && !s.tlMoved) return false;
      s.tlMoved = true;
      const int i = indexAt(x);
      if (s.tlDrag == Drag::Pan) s.timeline.panBy(x - s.tlLastX, s.tlX0, s.tlX1);
      else if (s.tlDrag == Drag::Select) s.timeline.select(s.tlAnchor, i);
      else moveTo(i, i == n - 1, false);
      s.tlLastX = x;
      requestFrame();
      return false;
    }
    case QEvent::MouseButtonRelease: {
      auto* m = static_cast<QMouseEvent*>(e);
      if (s.tlDrag == Drag::None) return false;
      const Drag drag = s.tlDrag;
      s.tlDrag = Drag::None;
      if (n == 0) return false;
      const int i = indexAt(m->position().x());
      if (drag == Drag::Select) endSelection(s.tlAnchor, i);
      else if (drag == Drag::Pan && !s.tlMoved) moveTo(i, i == n - 1, false);  // a click on a bar opens it
      requestFrame();
      return false;
    }
    default:
      return false;
  }
}

QSize TreeInspectorWidget::sizeHint() const { return s_->compact ? QSize(260, 140) : QSize(960, 640); }
QSize TreeInspectorWidget::minimumSizeHint() const { return s_->compact ? QSize(80, 50) : QSize(320, 240); }

int TreeInspectorWidget::nodesDrawnLastFrame() const { return s_->nodesDrawn; }
long long TreeInspectorWidget::framesDrawn() const { return s_->frames; }

bool TreeInspectorWidget::exportPng(const QString& path) {
  const QImage img = frame();
  return !img.isNull() && img.save(path, "PNG");
}

QImage TreeInspectorWidget::frame() {
  const qreal dpr = devicePixelRatioF();
  const QSize pixels = (QSizeF(size()) * dpr).toSize();
  if (s_->frameWanted || s_->image.size() != pixels) render(pixels, dpr);
  return s_->image;
}

void TreeInspectorWidget::paintEvent(QPaintEvent*) {
  const QImage img = frame();
  QPainter p(this);
  if (img.isNull()) {  // no OpenGL: say so rather than show garbage
    const Theme& th = theme(s_->dark, s_->highContrast);
    p.fillRect(rect(), QColor::fromRgbF(th.bg.r, th.bg.g, th.bg.b));
    p.setPen(QColor::fromRgbF(th.dim.r, th.dim.g, th.dim.b));
    if (s_->glFailed) p.drawText(rect(), Qt::AlignCenter, tr("The tree needs OpenGL 3, which is not available"));
    return;
  }
  p.drawImage(rect(), img);
}

namespace {
double g_render_cpu_ms = 0;  // GUI thread only
}  // namespace

double TreeInspectorWidget::renderCpuMs() { return g_render_cpu_ms; }

void TreeInspectorWidget::render(const QSize& pixels, qreal dpr) {
  State& s = *s_;
  s.frameWanted = false;
  if (s.glFailed || pixels.isEmpty()) return;
  // Reading the frame back waits for the rasterizer, so its threads' work for this frame is done within.
  const double cpu0 = drawing_cpu_ms();
  if (!s.gl.valid() && !s.gl.create()) {
    qWarning("TreeInspectorWidget: no OpenGL context");
    s.glFailed = true;
    return;
  }
  if (!s.gl.makeCurrent()) {
    qWarning("TreeInspectorWidget: the OpenGL context could not be made current");
    s.glFailed = true;
    return;
  }
  initializeGL();
  if (s.gl.bind(pixels)) {
    if (pixels != s.image.size()) resizeGL(pixels.width(), pixels.height());
    paintGL();
    s.image = s.gl.read();
    s.image.setDevicePixelRatio(dpr);
  }
  s.gl.doneCurrent();
  g_render_cpu_ms += drawing_cpu_ms() - cpu0;
}

// ---------------------------------------------------------------------------------------------------------
// GL

void TreeInspectorWidget::initializeGL() {
  State& s = *s_;
  if (s.backendReady || s.glFailed) return;
  ImGui::SetCurrentContext(s.ctx);
  const QSurfaceFormat fmt = s.gl.context()->format();
  const char* glsl = nullptr;
  if (s.gl.context()->isOpenGLES()) {
    // The OpenGL 3 backend is compiled for desktop GL (its loader and glPolygonMode); under GLES it cannot run.
    qWarning("TreeInspectorWidget: OpenGL ES context (%d.%d): the ImGui OpenGL 3 backend needs desktop GL",
             fmt.majorVersion(), fmt.minorVersion());
    s.glFailed = true;
    return;
  }
  // GLSL 1.30 for GL 3.x/4.x (Mesa and llvmpipe give a 4.x compatibility context), 1.50 for core profiles
  // (macOS), 1.20 for a GL 2.x context. The backend picks its shader variant from this string.
  const int version = fmt.majorVersion() * 10 + fmt.minorVersion();
  if (fmt.profile() == QSurfaceFormat::CoreProfile && version >= 32) glsl = "#version 150";
  else if (version >= 30) glsl = "#version 130";
  else glsl = "#version 120";
  s.backendReady = ImGui_ImplOpenGL3_Init(glsl);
  if (!s.backendReady) {
    qWarning("TreeInspectorWidget: ImGui_ImplOpenGL3_Init(%s) failed", glsl);
    s.glFailed = true;
  }
  s.fontDirty = true;
}

void TreeInspectorWidget::resizeGL(int, int) {
  s_->trailing = std::max(s_->trailing, 1);
}

bool TreeInspectorWidget::event(QEvent* e) {
  State& s = *s_;
  if (!s.compact && timelineEvent(e)) return true;
  // A click (press and release in one place) on the tree selects the node under it, on the canvas' background
  // clears the selection; a drag pans, as before.
  if (!s.compact && (e->type() == QEvent::MouseButtonPress || e->type() == QEvent::MouseButtonRelease)) {
    const auto* m = static_cast<QMouseEvent*>(e);
    const QPoint at = m->position().toPoint();
    if (m->button() == Qt::LeftButton && e->type() == QEvent::MouseButtonPress) {
      s.pressAt = at;
    } else if (m->button() == Qt::LeftButton && (at - s.pressAt).manhattanLength() <= 3 && at.x() >= s.canvasMin.x &&
               at.x() <= s.canvasMax.x && at.y() >= s.canvasMin.y && at.y() <= s.canvasMax.y) {
      selectNode(nodeAt(m->position()));
    }
  }
  if (s.input.handle(e)) {
    s.trailing = 2;  // a release or a hover change needs one more frame to show
    requestFrame();
    switch (e->type()) {
      case QEvent::Wheel:
        e->accept();
        return true;  // the wheel zooms: do not scroll a parent
      case QEvent::KeyPress:
      case QEvent::KeyRelease: {
        const int k = static_cast<QKeyEvent*>(e)->key();
        if (!s.compact && (k == Qt::Key_Left || k == Qt::Key_Right || k == Qt::Key_Home || k == Qt::Key_End ||
                           k == Qt::Key_PageUp || k == Qt::Key_PageDown || k == Qt::Key_F)) {
          e->accept();
          return true;
        }
        break;
      }
      default:
        break;
    }
  }
  return QWidget::event(e);
}

void TreeInspectorWidget::rebuildFonts(qreal dpr) {
  State& s = *s_;
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  s.font = nullptr;
  const std::vector<char>& ttf = fontFile();
  const float px = std::round(kUiFontPx * s.fontScale * float(dpr));
  if (!ttf.empty()) {
    ImFontGlyphRangesBuilder b;
    static const ImWchar kStatic[] = {0x0020, 0x024F, 0x0370, 0x052F, 0x2000, 0x23FF,
                                      0x2500, 0x25FF, 0x2700, 0x27BF, 0};
    static const ImWchar kAscii[] = {0x0020, 0x007E, 0};
    b.AddRanges(s.compact ? kAscii : kStatic);  // a miniature draws no text: keep its atlas small
    if (!s.compact)
      for (ImWchar c : s.extraGlyphs) b.AddChar(c);
    s.ranges.clear();
    b.BuildRanges(&s.ranges);
    ImFontConfig cfg;
    cfg.FontDataOwnedByAtlas = false;  // the file stays in fontFile()'s static buffer
    cfg.OversampleH = 2;
    cfg.OversampleV = 1;
    s.font = io.Fonts->AddFontFromMemoryTTF(const_cast<char*>(ttf.data()), int(ttf.size()), px, &cfg, s.ranges.Data);
  }
  s.unicode = s.font != nullptr;
  if (!s.font) {
    ImFontConfig cfg;
    cfg.SizePixels = std::round(13.0f * float(dpr));
    s.font = io.Fonts->AddFontDefault(&cfg);
  }
  io.FontGlobalScale = 1.0f / float(dpr);  // rasterised at device pixels, laid out in logical ones
  if (s.backendReady) {
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
  }
  s.fontDpr = dpr;
  s.fontDirty = false;
}

void TreeInspectorWidget::paintGL() {
  State& s = *s_;
  s.since_paint.restart();
  const Theme& th = theme(s.dark, s.highContrast);
  QOpenGLFunctions* f = s.gl.context()->functions();
  f->glClearColor(th.bg.r, th.bg.g, th.bg.b, 1.0f);
  f->glClear(GL_COLOR_BUFFER_BIT);
  if (!s.backendReady) return;

  ImGui::SetCurrentContext(s.ctx);
  ImGuiIO& io = ImGui::GetIO();
  const qreal dpr = devicePixelRatioF();
  if (s.fontDirty || dpr != s.fontDpr) rebuildFonts(dpr);
  const double now = double(s.clock.nsecsElapsed()) * 1e-9;
  const float dt = s.frames == 0 ? 1.0f / 60.0f : float(now - s.lastTime);
  s.lastTime = now;
  s.input.apply(io, QSizeF(width(), height()), dpr, dt);

  ImGui_ImplOpenGL3_NewFrame();
  ImGui::NewFrame();
  s.nodesDrawn = 0;
  s.canvasMin = s.canvasMax = ImVec2(0, 0);
  drawFrame();
  ImGui::Render();
  if (s.canvasMax.x > s.canvasMin.x && s.canvasMax.y > s.canvasMin.y) {
    const float k = float(dpr);
    const int x0 = int(std::floor(s.canvasMin.x * k)), x1 = int(std::ceil(s.canvasMax.x * k));
    const int y0 = int(std::floor(s.canvasMin.y * k)), y1 = int(std::ceil(s.canvasMax.y * k));
    const int fbh = int(std::lround(height() * k));
    f->glEnable(GL_SCISSOR_TEST);
    f->glScissor(x0, fbh - y1, x1 - x0, y1 - y0);  // GL's origin is bottom-left
    f->glClearColor(th.canvas.r, th.canvas.g, th.canvas.b, 1.0f);
    f->glClear(GL_COLOR_BUFFER_BIT);
    f->glDisable(GL_SCISSOR_TEST);
  }
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  ++s.frames;
  if (s.input.pending() || s.trailing > 0) {
    s.trailing = std::max(0, s.trailing - 1);
    requestFrame();
  }
}

// ---------------------------------------------------------------------------------------------------------
// The frame

void TreeInspectorWidget::stepBy(int delta, bool fromFrame) {
  State& s = *s_;
  if (s.steps.empty()) return;
  const int last = int(s.steps.size()) - 1;
  const int index = std::clamp((s.current < 0 ? last : s.current) + delta, 0, last);
  moveTo(index, index == last, fromFrame);
}

void TreeInspectorWidget::moveTo(int index, bool follow, bool fromFrame) {
  State& s = *s_;
  s.follow = follow;
  if (index == s.current) return;
  s.current = index;
  s.trailing = std::max(s.trailing, 1);
  if (fromFrame) {
    // Not from inside paintGL: a slot might touch another GL widget while this context is current.
    QMetaObject::invokeMethod(this, [this, index] { emit currentStepChanged(index); }, Qt::QueuedConnection);
  } else {
    emit currentStepChanged(index);
  }
}

void TreeInspectorWidget::drawFrame() {
  State& s = *s_;
  const Theme& th = theme(s.dark, s.highContrast);
  ImGuiIO& io = ImGui::GetIO();

  if (!s.compact && !s.steps.empty()) {
    auto pressed = [](int qtKey) { return ImGui::IsKeyPressed(ImGuiQtInput::keyIndex(qtKey), true); };
    if (pressed(Qt::Key_Left)) stepBy(-1, true);
    if (pressed(Qt::Key_Right)) stepBy(+1, true);
    if (pressed(Qt::Key_PageUp)) stepBy(-10, true);
    if (pressed(Qt::Key_PageDown)) stepBy(+10, true);
    if (ImGui::IsKeyPressed(ImGuiQtInput::keyIndex(Qt::Key_Home), false)) moveTo(0, s.steps.size() == 1, true);
    if (ImGui::IsKeyPressed(ImGuiQtInput::keyIndex(Qt::Key_End), false)) moveTo(int(s.steps.size()) - 1, true, true);
    if (ImGui::IsKeyPressed(ImGuiQtInput::keyIndex(Qt::Key_F), false)) s.userView = false, s.fitPending = true;
  }

  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(io.DisplaySize);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, s.compact ? ImVec2(0, 0) : ImVec2(8, 6));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowRounding, 0.0f);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0.0f);
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(8, 5));
  ImGui::PushStyleColor(ImGuiCol_WindowBg, pack_abgr(th.bg));
  ImGui::PushStyleColor(ImGuiCol_Text, pack_abgr(th.text));
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus |
                                 ImGuiWindowFlags_NoScrollWithMouse | ImGuiWindowFlags_NoNav |
                                 ImGuiWindowFlags_NoBackground;  // glClear paints the background
  ImGui::Begin("##specscope_tree_inspector", nullptr, flags);
  if (!s.compact) {
    drawHeader();
    // The session's notes on this step (`specscope-cli sessions note`), on a line of their own under the header.
    const std::string note = currentNote().toStdString();
    if (!note.empty()) {
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(pack_abgr(th.bar_current)), "Note: %s", note.c_str());
      ImGui::PopTextWrapPos();
    }
  }
  ImVec2 avail = ImGui::GetContentRegionAvail();
  if (!s.compact) avail.y -= (kLegendH + kTimelineH) * s.fontScale + 2 * ImGui::GetStyle().ItemSpacing.y;
  drawTree(ImVec2(std::max(avail.x, 1.0f), std::max(avail.y, 1.0f)));
  if (!s.compact) {
    drawLegend();
    drawTimeline();
  }
  ImGui::End();
  ImGui::PopStyleColor(2);
  ImGui::PopStyleVar(4);
}

void TreeInspectorWidget::drawHeader() {
  State& s = *s_;
  const Theme& th = theme(s.dark, s.highContrast);
  if (s.steps.empty()) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(pack_abgr(th.dim)), "No steps yet");
  } else {
    const StepRecord& st = s.steps[size_t(s.current)];
    int rejected = 0, pruned = 0;
    for (const auto& n : st.nodes) {
      rejected += !n.pruned && n.decision == NodeDecision::Rejected;
      pruned += n.pruned || n.decision == NodeDecision::Pruned;
    }
    ImGui::TextUnformatted(headerTitle().toUtf8().constData());
    ImGui::SameLine();
    // A mixture-of-experts target: the experts this step's forward read, the term that grows with a tree's rows.
    const std::string experts = std::isnan(st.experts_per_layer)
                                    ? std::string()
                                    : "  \xC2\xB7  " + fmtProb(st.experts_per_layer, "%.1f") + " experts/layer";
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(pack_abgr(th.dim)),
                       "%s  \xC2\xB7  pos %d  \xC2\xB7  %d drafted, %d accepted%s, %d rejected, %d pruned%s",
                       st.method.c_str(), st.position, int(st.nodes.size()), st.accepted_count(),
                       bonus_committed(st) ? " + bonus" : "", rejected, pruned, experts.c_str());
    // The cost model's breakdown of this step (when the target's step-cost curve is known).
    if (ImGui::IsItemHovered()) {
      const QString cost = stepCostText();
      if (!cost.isEmpty()) ImGui::SetTooltip("%s", cost.toUtf8().constData());
    }
  }

  // Right-aligned controls.
  const float bw1 = ImGui::CalcTextSize("Fit").x + 2 * ImGui::GetStyle().FramePadding.x;
  const float bw2 = ImGui::CalcTextSize("Live").x + 2 * ImGui::GetStyle().FramePadding.x;
  const float right = ImGui::GetWindowContentRegionMax().x;
  const bool replay = s.recordedLast >= 0;  // a recorded run has no "live" to follow: no Live button
  ImGui::SameLine(std::max(ImGui::GetCursorPosX(), right - bw1 - (replay ? 0 : bw2 + ImGui::GetStyle().ItemSpacing.x)));
  if (ImGui::SmallButton("Fit")) s.userView = false, s.fitPending = true;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Fit the tree to the view (F, or double-click)");
  if (replay) return;
  ImGui::SameLine();
  const bool live = s.follow;
  if (live) ImGui::PushStyleColor(ImGuiCol_Button, pack_abgr(th.accepted, 0.55f));
  if (ImGui::SmallButton("Live") && !s.steps.empty()) moveTo(int(s.steps.size()) - 1, true, true);
  if (live) ImGui::PopStyleColor();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(live ? "Following the live run" : "Jump to the last step and follow the live run (End)");
}

void TreeInspectorWidget::drawTree(const ImVec2& size) {
  State& s = *s_;
  const Theme& th = theme(s.dark, s.highContrast);
  ImGuiIO& io = ImGui::GetIO();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 c0 = ImGui::GetCursorScreenPos();
  const ImVec2 c1 = c0 + size;
  ImGui::InvisibleButton("##canvas", size,
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight |
                             ImGuiButtonFlags_MouseButtonMiddle);
  const bool hovered = ImGui::IsItemHovered();
  const bool active = ImGui::IsItemActive();
  dl->PushClipRect(c0, c1, true);
  // The canvas background is a scissored glClear in paintGL (a software rasteriser fills it for free, unlike
  // a blended textured quad over most of the window).
  s.canvasMin = c0;
  s.canvasMax = c1;

  if (s.current < 0 || s.current >= int(s.steps.size())) {
    if (!s.compact) {
      const char* msg = "Waiting for the first step\xE2\x80\xA6";
      const ImVec2 ts = ImGui::CalcTextSize(msg);
      dl->AddText(c0 + (size - ts) * 0.5f, pack_abgr(th.dim), msg);
    }
    dl->PopClipRect();
    return;
  }
  const StepRecord& step = s.steps[size_t(s.current)];
  if (s.layoutStep != s.current || s.layoutGeneration != s.generation || s.layoutCompact != s.compact) {
    s.layout = layout_step_tree(step, layoutParams(s.compact));
    s.layoutStep = s.current;
    s.layoutGeneration = s.generation;
    s.layoutCompact = s.compact;
  }
  const TreeLayout& L = s.layout;
  const float rowPx = s.compact ? kCompactRowPx : kRowPx;
  if (!s.compact) s.colStretch = 1.0f;
  float colPx = (s.compact ? kCompactColPx : kColPx) * s.colStretch;

  // Fit: on request, on a new step or a resized canvas unless the user moved the view; always when compact.
  const bool canvasChanged = std::fabs(s.fittedCanvas.x - size.x) > 0.5f || std::fabs(s.fittedCanvas.y - size.y) > 0.5f;
  if (s.compact || s.fitPending ||
      (!s.userView && (s.fittedStep != s.current || s.fittedGeneration != s.generation || canvasChanged))) {
    const float margin = s.compact ? 3.0f : 16.0f;
    const float top = s.compact ? 0.0f : 10.0f;  // room for the root's tag
    const float aw = std::max(size.x - 2 * margin, 1.0f), ah = std::max(size.y - 2 * margin - top, 1.0f);
    const float wh = std::max(L.height() * rowPx, 1.0f);
    if (s.compact) {
      const float base = std::max(L.width() * kCompactColPx, 1.0f);
      s.colStretch = std::clamp((aw / base) / (ah / wh), 1.0f, 2.5f);
      colPx = kCompactColPx * s.colStretch;
    }
    const float ww = std::max(L.width() * colPx, 1.0f);
    float z = std::min(aw / ww, ah / wh);
    z = s.compact ? std::clamp(z, 0.05f, 1.5f) : std::clamp(z, 0.55f, 1.35f);
    s.zoom = z;
    s.pan.x = margin + std::max(0.0f, (aw - ww * z) * 0.5f) - L.min_x * colPx * z;
    if (wh * z <= ah) {
      s.pan.y = margin + top + (ah - wh * z) * 0.5f - L.min_y * rowPx * z;
    } else {
      // Too tall even at the smallest legible zoom: centre the accepted path (root to bonus), the part that
      // matters, without scrolling past the tree's ends.
      float lo = FLT_MAX, hi = -FLT_MAX;
      for (const LayoutItem& li : L.items)
        if (li.on_accepted_path) lo = std::min(lo, li.y), hi = std::max(hi, li.y);
      const float focus = 0.5f * (lo + hi) * rowPx * z;
      s.pan.y = std::clamp(margin + top + 0.5f * ah - focus, margin + top + ah - L.max_y * rowPx * z,
                           margin + top - L.min_y * rowPx * z);
    }
    s.fittedStep = s.current;
    s.fittedGeneration = s.generation;
    s.fittedCanvas = size;
    s.fitPending = false;
  }

  // Interaction.
  if (!s.compact) {
    if (active && (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 1.0f) ||
                   ImGui::IsMouseDragging(ImGuiMouseButton_Middle, 1.0f) ||
                   ImGui::IsMouseDragging(ImGuiMouseButton_Right, 1.0f))) {
      s.pan = s.pan + io.MouseDelta;
      s.userView = true;
    }
    if (hovered && io.MouseWheel != 0.0f) {
      const float nz = std::clamp(s.zoom * std::pow(1.15f, io.MouseWheel), 0.08f, 6.0f);
      const ImVec2 m = io.MousePos - c0;  // keep the point under the cursor in place
      s.pan = m - (m - s.pan) * (nz / s.zoom);
      s.zoom = nz;
      s.userView = true;
    }
    if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) s.userView = false, s.fitPending = true;
  }

  const float z = s.zoom;
  const float hw = 0.5f * L.box_width * colPx * z, hh = 0.5f * L.box_height * rowPx * z;
  auto centre = [&](const LayoutItem& li) { return c0 + s.pan + ImVec2(li.x * colPx * z, li.y * rowPx * z); };
  auto visible = [&](ImVec2 a, ImVec2 b) { return b.x >= c0.x && a.x <= c1.x && b.y >= c0.y && a.y <= c1.y; };
  if (!s.compact) {
    s.hitCentres.resize(L.items.size());
    for (size_t i = 0; i < L.items.size(); ++i) s.hitCentres[i] = centre(L.items[i]);
    s.hitHalf = ImVec2(hw + 2, hh + 2);
  }
  const int selected = selectedNode();
  ImFont* font = ImGui::GetFont();

  // Hovered item.
  int hot = -1;
  if (!s.compact && hovered && !ImGui::IsMouseDragging(ImGuiMouseButton_Left, 1.0f)) {
    for (int i = 0; i < int(L.items.size()); ++i) {
      const ImVec2 c = centre(L.items[size_t(i)]);
      if (std::fabs(io.MousePos.x - c.x) <= hw + 2 && std::fabs(io.MousePos.y - c.y) <= hh + 2) hot = i;
    }
  }

  // Edges, then their probability labels.
  const float textScale = std::clamp(std::sqrt(z), 0.0f, 1.3f);  // text shrinks slower than the boxes
  const float edgeFont = kEdgeFontPx * textScale;
  const bool edgeLabels = !s.compact && edgeFont >= 7.0f;
  for (int i = 1; i < int(L.items.size()); ++i) {
    const LayoutItem& li = L.items[size_t(i)];
    const LayoutItem& pi = L.items[size_t(li.parent)];
    const ImVec2 pc = centre(pi), cc = centre(li);
    const ImVec2 p0(pc.x + hw, pc.y), p3(cc.x - hw, cc.y);
    if (!visible(ImVec2(std::min(p0.x, p3.x), std::min(p0.y, p3.y)), ImVec2(std::max(p0.x, p3.x), std::max(p0.y, p3.y))))
      continue;
    const float dx = (p3.x - p0.x) * 0.5f;
    const ImVec2 p1(p0.x + dx, p0.y), p2(p3.x - dx, p3.y);
    const bool onPath = li.on_accepted_path && pi.on_accepted_path;
    const bool prunedEdge = li.kind == LayoutKind::Draft &&
                            (step.nodes[size_t(li.node)].pruned || step.nodes[size_t(li.node)].decision == NodeDecision::Pruned);
    const ImU32 col = onPath ? pack_abgr(li.kind == LayoutKind::Bonus ? th.bonus : th.edge_path)
                             : pack_abgr(th.edge, prunedEdge ? 0.6f : 0.9f);
    const float w = (onPath ? 2.6f : 1.3f) * std::clamp(z, s.compact ? 0.5f : 0.7f, 1.3f);
    if (prunedEdge) {
      ImVec2 pts[17];
      for (int k = 0; k <= 16; ++k) pts[k] = bezier(p0, p1, p2, p3, float(k) / 16.0f);
      dashedPolyline(dl, pts, 17, col, w, 4.0f, 3.0f);
    } else {
      dl->AddBezierCubic(p0, p1, p2, p3, col, w);
    }
    if (edgeLabels && li.kind == LayoutKind::Draft) {
      const float p = step.nodes[size_t(li.node)].draft_prob;
      if (!std::isnan(p)) {
        const std::string t = fmtProb(p);
        const ImVec2 ts = font->CalcTextSizeA(edgeFont, FLT_MAX, 0.0f, t.c_str());
        dl->AddText(font, edgeFont, ImVec2(p3.x - ts.x - 3.0f, p3.y - ts.y - 1.0f), pack_abgr(th.dim), t.c_str());
      }
    }
  }

  // Boxes.
  const float nodeFont = std::min(kNodeFontPx * textScale, 1.6f * hh);
  const bool labels = !s.compact && nodeFont >= 6.5f;
  const float tagFont = kTagFontPx * textScale;
  for (int i = 0; i < int(L.items.size()); ++i) {
    const LayoutItem& li = L.items[size_t(i)];
    const ImVec2 c = centre(li);
    const ImVec2 a(c.x - hw, c.y - hh), b(c.x + hw, c.y + hh);
    if (!visible(a - ImVec2(6, 14), b + ImVec2(6, 6))) continue;
    const NodeStyle st = styleFor(th, step, li);
    drawBox(dl, st, a, b, z, th, i == hot, s.compact);
    if (li.kind == LayoutKind::Draft && li.node == selected)  // the "why" panel's node
      dl->AddRect(a - ImVec2(4, 4), b + ImVec2(4, 4), pack_abgr(th.text), 4.0f, 0, 2.0f);
    ++s.nodesDrawn;
    if (labels) {
      const std::string text = fitText(font, nodeFont, itemLabel(s.steps, s.current, li, s.unicode), 2 * hw - 8.0f, s.unicode);
      const ImVec2 ts = font->CalcTextSizeA(nodeFont, FLT_MAX, 0.0f, text.c_str());
      const ImVec2 tp(c.x - ts.x * 0.5f, c.y - ts.y * 0.5f);
      dl->AddText(font, nodeFont, tp, pack_abgr(st.text), text.c_str());
      if (st.strike) dl->AddLine(ImVec2(tp.x - 2, c.y), ImVec2(tp.x + ts.x + 2, c.y), pack_abgr(st.text, 0.8f), 1.2f);
      if (st.tag && tagFont >= 6.5f) {
        // The root's tag above it (its column is its own); the bonus's to its right (it is always a leaf).
        const ImVec2 gs = font->CalcTextSizeA(tagFont, FLT_MAX, 0.0f, st.tag);
        const ImVec2 at = li.kind == LayoutKind::Bonus ? ImVec2(b.x + std::max(2.0f, 3.0f * z) + 6.0f, c.y - gs.y * 0.5f)
                                                       : ImVec2(a.x, a.y - gs.y - 1.0f);
        dl->AddText(font, tagFont, at, pack_abgr(st.outline), st.tag);
      }
    }
  }
  dl->PopClipRect();

  // Tooltip.
  if (hot >= 0 && !s.compact) {
    const LayoutItem& li = L.items[size_t(hot)];
    const ImVec4 dim = ImGui::ColorConvertU32ToFloat4(pack_abgr(th.dim));
    ImGui::BeginTooltip();
    auto row = [&](const char* k, const std::string& v) {
      ImGui::TextColored(dim, "%s", k);
      ImGui::SameLine(96);
      ImGui::TextUnformatted(v.c_str());
    };
    if (li.kind == LayoutKind::Root) {
      ImGui::TextUnformatted("Root (last committed token)");
      ImGui::Separator();
      row("token id", step.root_token < 0 ? std::string("none (prefill)") : std::to_string(step.root_token));
      row("text", rootText(s.steps, s.current, s.unicode));
      row("position", std::to_string(step.position));
      row("method", step.method);
      if (!std::isnan(step.experts_per_layer)) row("experts", fmtProb(step.experts_per_layer, "%.1f") + " per layer ran");
    } else if (li.kind == LayoutKind::Bonus) {
      ImGui::TextUnformatted("Bonus token (sampled by the target)");
      ImGui::Separator();
      row("token id", std::to_string(step.bonus_token));
      row("text", std::string("\"").append(display_token(step.bonus_text, 40, s.unicode)).append("\""));
      row("p", fmtProb(step.bonus_prob, "%.4f"));
      row("drawn from", step.bonus_source == BonusSource::Target ? "target distribution" : "residual (p - q)+");
      row("depth", std::to_string(li.depth));
    } else {
      const DraftNode& n = step.nodes[size_t(li.node)];
      const NodeDecision d = n.pruned ? NodeDecision::Pruned : n.decision;
      ImGui::Text("Draft node %d", n.id);
      ImGui::Separator();
      row("token id", std::to_string(n.token));
      row("text", std::string("\"").append(display_token(n.text, 40, s.unicode)).append("\""));
      row("draft p", fmtProb(n.draft_prob, "%.4f"));
      row("target p", fmtProb(n.target_prob, "%.4f"));
      row("accept p", fmtProb(n.accept_prob, "%.4f"));
      row("cum score", fmtProb(n.cum_score, "%.4f"));
      row("depth", std::to_string(n.depth));
      row("source", std::string(to_string(n.source)) + (n.source_index ? std::string("[").append(std::to_string(n.source_index)).append("]") : std::string()));
      row("decision", to_string(d));
    }
    ImGui::EndTooltip();
  }
}

void TreeInspectorWidget::drawLegend() {
  State& s = *s_;
  const Theme& th = theme(s.dark, s.highContrast);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImFont* font = ImGui::GetFont();
  const float fs = ImGui::GetFontSize() * 0.9f;
  ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = kLegendH * s.fontScale;
  const float cy = p.y + h * 0.5f;
  auto text = [&](const char* t, ImU32 col) {
    const ImVec2 ts = font->CalcTextSizeA(fs, FLT_MAX, 0.0f, t);
    dl->AddText(font, fs, ImVec2(p.x, cy - ts.y * 0.5f), col, t);
    p.x += ts.x;
  };
  text("draft p  0 ", pack_abgr(th.dim));
  const float barW = 120.0f, barH = 10.0f;
  const int seg = 24;
  for (int i = 0; i < seg; ++i) {
    const float x0 = p.x + barW * float(i) / seg, x1 = p.x + barW * float(i + 1) / seg;
    const ImU32 ca = pack_abgr(cividis(float(i) / seg)), cb = pack_abgr(cividis(float(i + 1) / seg));
    dl->AddRectFilledMultiColor(ImVec2(x0, cy - barH / 2), ImVec2(x1 + 0.5f, cy + barH / 2), ca, cb, cb, ca);
  }
  p.x += barW;
  text(" 1    ", pack_abgr(th.dim));
  dl->AddRectFilled(ImVec2(p.x, cy - barH / 2), ImVec2(p.x + 14, cy + barH / 2), pack_abgr(no_value_grey()), 2.0f);
  p.x += 18;
  text("none", pack_abgr(th.dim));
  p.x += 22;

  // Decision markers, drawn with the tree's own renderer on sample nodes.
  StepRecord sample;
  sample.bonus_prob = 0.7f;
  sample.nodes.resize(1);
  sample.nodes[0].draft_prob = 0.7f;
  struct Entry {
    const char* label;
    NodeDecision d;
    bool bonus;
  };
  const Entry entries[] = {{"accepted", NodeDecision::Accepted, false},
                           {"rejected", NodeDecision::Rejected, false},
                           {"not reached", NodeDecision::NotReached, false},
                           {"pruned", NodeDecision::Pruned, false},
                           {"bonus", NodeDecision::Accepted, true}};
  for (const Entry& e : entries) {
    sample.nodes[0].decision = e.d;
    sample.nodes[0].pruned = e.d == NodeDecision::Pruned;
    LayoutItem li;
    li.kind = e.bonus ? LayoutKind::Bonus : LayoutKind::Draft;
    li.node = 0;
    NodeStyle st = styleFor(th, sample, li);
    const ImVec2 a(p.x + (e.bonus ? 4.0f : 1.0f), cy - 6.0f), b(a.x + 26.0f, cy + 6.0f);
    drawBox(dl, st, a, b, 0.8f, th, false, false);
    p.x = b.x + (e.bonus ? 10.0f : 7.0f);
    text(e.label, pack_abgr(th.text));
    p.x += 16;
  }
  ImGui::Dummy(ImVec2(ImGui::GetContentRegionAvail().x, h));
}

void TreeInspectorWidget::drawTimeline() {
  State& s = *s_;
  const Theme& th = theme(s.dark, s.highContrast);
  ImGuiIO& io = ImGui::GetIO();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 size(ImGui::GetContentRegionAvail().x, kTimelineH * s.fontScale);
  const ImVec2 t0 = ImGui::GetCursorScreenPos();
  const ImVec2 t1 = t0 + size;
  // The button only gives hover (the tooltip); clicks, drags and the wheel are handled from Qt's events
  // (timelineEvent), with the geometry this frame records.
  ImGui::InvisibleButton("##timeline", ImVec2(std::max(size.x, 1.0f), size.y));
  const bool hovered = ImGui::IsItemHovered();
  dl->AddRectFilled(t0, t1, pack_abgr(th.canvas), 4.0f);
  const int n = int(s.steps.size());
  ImFont* font = ImGui::GetFont();
  const float fs = ImGui::GetFontSize() * 0.85f;
  s.tlX0 = s.tlX1 = 0;
  if (n == 0) return;

  const float padX = 6.0f, labelH = fs + 4.0f;
  const float x0 = t0.x + padX, x1 = t1.x - padX;
  const float base = t1.y - 4.0f, top = t0.y + labelH;
  s.tlX0 = x0, s.tlX1 = x1, s.tlY0 = top - 2.0f, s.tlY1 = t1.y;
  const TimelineView& tl = s.timeline;
  const int firstShown = std::clamp(int(std::floor(tl.first())), 0, n - 1);
  const int endShown = std::clamp(int(std::ceil(tl.first() + tl.span())), firstShown + 1, n);
  int maxAcc = 1;
  for (const auto& st : s.steps) maxAcc = std::max(maxAcc, st.accepted_count());  // the whole run's: zoom keeps heights
  const float w = (x1 - x0) / float(tl.span());
  auto xOf = [&](double i) { return float(tl.xOf(i, x0, x1)); };
  auto barHeight = [&](int acc) { return 2.0f + (base - top - 2.0f) * float(acc) / float(maxAcc); };
  const ImU32 bar = pack_abgr(th.bar);
  dl->PushClipRect(ImVec2(x0, t0.y), ImVec2(x1, t1.y), true);
  // The selected range, behind the bars.
  if (tl.hasSelection()) {
    const float a = xOf(tl.selectionFirst()), b = xOf(tl.selectionLast() + 1);
    dl->AddRectFilled(ImVec2(a, top - 2.0f), ImVec2(b, base + 2.0f), pack_abgr(th.bar_current, 0.22f));
    dl->AddLine(ImVec2(a, top - 2.0f), ImVec2(a, base + 2.0f), pack_abgr(th.bar_current), 1.5f);
    dl->AddLine(ImVec2(b, top - 2.0f), ImVec2(b, base + 2.0f), pack_abgr(th.bar_current), 1.5f);
  }
  if (w >= 2.0f) {
    const float gap = w >= 5.0f ? 1.0f : 0.0f;
    for (int i = firstShown; i < endShown; ++i) {
      const float bx = xOf(i);
      dl->AddRectFilled(ImVec2(bx, base - barHeight(s.steps[size_t(i)].accepted_count())), ImVec2(bx + w - gap, base), bar);
    }
  } else {
    // More steps than pixels: one column per pixel, the tallest of its steps.
    const int cols = std::max(1, int(x1 - x0));
    for (int c = 0; c < cols; ++c) {
      const int i0 = std::clamp(int(std::floor(tl.stepAt(x0 + float(c), x0, x1))), 0, n - 1);
      const int i1 = std::max(i0 + 1, int(std::floor(tl.stepAt(x0 + float(c + 1), x0, x1))));
      int acc = 0;
      for (int i = i0; i < std::min(i1, n); ++i) acc = std::max(acc, s.steps[size_t(i)].accepted_count());
      dl->AddRectFilled(ImVec2(x0 + float(c), base - barHeight(acc)), ImVec2(x0 + float(c) + 1.0f, base), bar);
    }
  }
  if (s.current >= 0) {
    const float bx = xOf(s.current);
    const float bw = std::max(w - (w >= 5.0f ? 1.0f : 0.0f), 2.0f);
    dl->AddRectFilled(ImVec2(bx, base - barHeight(s.steps[size_t(s.current)].accepted_count())), ImVec2(bx + bw, base),
                      pack_abgr(th.bar_current));
    dl->AddLine(ImVec2(bx + bw * 0.5f, top - 2.0f), ImVec2(bx + bw * 0.5f, base), pack_abgr(th.bar_current, 0.6f), 1.0f);
  }
  // Steps with a note: a small flag above their bar.
  if (!s.notes.steps.empty()) {
    const float k = std::clamp(w * 0.5f, 3.0f, 6.0f);
    for (int i = firstShown; i < endShown; ++i) {
      if (s.notes.for_step(s.steps[size_t(i)].step).empty()) continue;
      const float cx = xOf(i + 0.5);
      dl->AddTriangleFilled(ImVec2(cx - k, top - 2.0f), ImVec2(cx + k, top - 2.0f), ImVec2(cx, top - 2.0f + 1.6f * k),
                            pack_abgr(th.bonus));
    }
  }
  dl->PopClipRect();

  char label[240];
  int len = std::snprintf(label, sizeof label, "steps  (bar = accepted length, max %d)", maxAcc);
  if (tl.zoomed() && len < int(sizeof label))
    len += std::snprintf(label + len, sizeof label - size_t(len), "  \xC2\xB7  %d\xE2\x80\x93%d of %d shown",
                         s.steps[size_t(firstShown)].step, s.steps[size_t(endShown - 1)].step, s.steps.back().step);
  if (tl.hasSelection() && len < int(sizeof label))
    len += std::snprintf(label + len, sizeof label - size_t(len), "  \xC2\xB7  selected %d\xE2\x80\x93%d",
                         s.steps[size_t(tl.selectionFirst())].step, s.steps[size_t(tl.selectionLast())].step);
  const char* hint = liveShown() ? (s.unicode ? "   \xE2\x97\x8F live" : "   live")  // ●
                                 : (s.unicode ? "   \xE2\x86\x90 \xE2\x86\x92 Home End" : "   Left Right Home End");  // ← →
  if (len < int(sizeof label)) std::snprintf(label + len, sizeof label - size_t(len), "%s", hint);
  if (!s.unicode)  // the built-in font has no en dash or middle dot
    for (char* c = label; *c; ++c)
      if (static_cast<unsigned char>(*c) >= 0x80) *c = ' ';
  dl->AddText(font, fs, ImVec2(x0, t0.y + 2.0f), pack_abgr(th.dim), label);

  if (hovered && s.tlDrag == State::TimelineDrag::None) {
    const int i = tl.indexAt(io.MousePos.x, x0, x1);
    const StepRecord& st = s.steps[size_t(i)];
    const std::string note = s.notes.for_step(st.step);
    ImGui::SetTooltip("step %d  \xC2\xB7  %d accepted%s of %d drafted%s%s\n"
                      "wheel: zoom \xC2\xB7 drag: %s \xC2\xB7 shift-drag or right-drag: select steps \xC2\xB7 "
                      "double-click: %s",
                      st.step, st.accepted_count(), bonus_committed(st) ? " + bonus" : "", int(st.nodes.size()),
                      note.empty() ? "" : "\nNote: ", note.c_str(), tl.zoomed() ? "pan" : "scrub",
                      tl.hasSelection() ? "clear the selection (or Esc)" : "show every step");
  }
}

// ---------------------------------------------------------------------------------------------------------
// SVG export: the current step's whole tree at zoom 1, written by hand.

bool TreeInspectorWidget::exportSvg(const QString& path) const {
  const State& s = *s_;
  if (s.current < 0 || s.current >= int(s.steps.size())) return false;
  const StepRecord& step = s.steps[size_t(s.current)];
  const Theme& th = theme(s.dark, s.highContrast);
  const TreeLayout L = layout_step_tree(step, layoutParams(false));
  const float colPx = kColPx, rowPx = kRowPx;
  const float margin = 24.0f, titleH = 28.0f;
  const float W = L.width() * colPx + 2 * margin, H = L.height() * rowPx + 2 * margin + titleH;
  const float ox = margin - L.min_x * colPx, oy = margin + titleH - L.min_y * rowPx;
  const float hw = 0.5f * L.box_width * colPx, hh = 0.5f * L.box_height * rowPx;
  auto cx = [&](const LayoutItem& li) { return ox + li.x * colPx; };
  auto cy = [&](const LayoutItem& li) { return oy + li.y * rowPx; };

  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << ' ' << H << "\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\n"
    << "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\""
    << svgColor(th.pruned) << "\" stroke-opacity=\"0.55\" stroke-width=\"1\"/></pattern></defs>\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"" << svgColor(th.canvas) << "\"/>\n";
  o << "<text x=\"" << margin << "\" y=\"" << (margin + 4) << "\" font-size=\"14\" fill=\"" << svgColor(th.text)
    << "\">" << markup_escape(headerTitle().toStdString() + " \xC2\xB7 " +
                          step.method + " \xC2\xB7 " + std::to_string(step.nodes.size()) + " drafted, " +
                          std::to_string(step.accepted_count()) + " accepted" + (bonus_committed(step) ? " + bonus" : ""))
    << "</text>\n";

  // Edges.
  o << "<g fill=\"none\">\n";
  for (size_t i = 1; i < L.items.size(); ++i) {
    const LayoutItem& li = L.items[i];
    const LayoutItem& pi = L.items[size_t(li.parent)];
    const float x0 = cx(pi) + hw, y0 = cy(pi), x3 = cx(li) - hw, y3 = cy(li), dx = (x3 - x0) * 0.5f;
    const bool onPath = li.on_accepted_path && pi.on_accepted_path;
    const bool pruned = li.kind == LayoutKind::Draft &&
                        (step.nodes[size_t(li.node)].pruned || step.nodes[size_t(li.node)].decision == NodeDecision::Pruned);
    o << "<path d=\"M" << x0 << ',' << y0 << " C" << (x0 + dx) << ',' << y0 << ' ' << (x3 - dx) << ',' << y3 << ' ' << x3
      << ',' << y3 << "\" stroke=\"" << svgColor(onPath ? (li.kind == LayoutKind::Bonus ? th.bonus : th.edge_path) : th.edge)
      << "\" stroke-width=\"" << (onPath ? 2.6 : 1.3) << '"' << (pruned ? " stroke-dasharray=\"4 3\"" : "") << "/>\n";
    if (li.kind == LayoutKind::Draft && !std::isnan(step.nodes[size_t(li.node)].draft_prob))
      o << "<text x=\"" << (x3 - 3) << "\" y=\"" << (y3 - 3) << "\" font-size=\"10.5\" text-anchor=\"end\" fill=\""
        << svgColor(th.dim) << "\">" << markup_escape(fmtProb(step.nodes[size_t(li.node)].draft_prob)) << "</text>\n";
  }
  o << "</g>\n";

  // Boxes.
  for (const LayoutItem& li : L.items) {
    const NodeStyle st = styleFor(th, step, li);
    const float x = cx(li) - hw, y = cy(li) - hh, w = 2 * hw, h = 2 * hh;
    o << "<g>";
    o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h << "\" rx=\"5\" fill=\""
      << svgColor(st.fill) << "\"/>";
    if (st.hatched)
      o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h
        << "\" rx=\"5\" fill=\"url(#hatch)\"/>";
    o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h << "\" rx=\"5\" fill=\"none\" stroke=\""
      << svgColor(st.outline) << "\" stroke-width=\"" << st.outline_width << '"'
      << (st.dashed ? " stroke-dasharray=\"5 3.5\"" : "") << "/>";
    if (st.double_outline) {
      const float g = 3.0f + st.outline_width;
      o << "<rect x=\"" << (x - g) << "\" y=\"" << (y - g) << "\" width=\"" << (w + 2 * g) << "\" height=\"" << (h + 2 * g)
        << "\" rx=\"" << (5 + g) << "\" fill=\"none\" stroke=\"" << svgColor(st.outline) << "\" stroke-width=\"1.2\"/>";
    }
    const float bx = x + w - 1, by = y + 1, r = std::clamp(0.26f * h, 3.0f, 9.0f);
    if (st.badge == Badge::Check)
      o << "<circle cx=\"" << bx << "\" cy=\"" << by << "\" r=\"" << r << "\" fill=\"" << svgColor(st.outline)
        << "\"/><polyline points=\"" << (bx - 0.5f * r) << ',' << by << ' ' << (bx - 0.12f * r) << ',' << (by + 0.42f * r)
        << ' ' << (bx + 0.52f * r) << ',' << (by - 0.38f * r) << "\" fill=\"none\" stroke=\"#ffffff\" stroke-width=\""
        << 0.3f * r << "\"/>";
    else if (st.badge == Badge::Cross)
      o << "<circle cx=\"" << bx << "\" cy=\"" << by << "\" r=\"" << r << "\" fill=\"" << svgColor(st.outline)
        << "\"/><path d=\"M" << (bx - 0.42f * r) << ',' << (by - 0.42f * r) << " L" << (bx + 0.42f * r) << ','
        << (by + 0.42f * r) << " M" << (bx - 0.42f * r) << ',' << (by + 0.42f * r) << " L" << (bx + 0.42f * r) << ','
        << (by - 0.42f * r) << "\" stroke=\"#ffffff\" stroke-width=\"" << 0.28f * r << "\"/>";
    else if (st.badge == Badge::Diamond) {
      const float k = 1.15f * r;
      o << "<polygon points=\"" << bx << ',' << (by - k) << ' ' << (bx + k) << ',' << by << ' ' << bx << ',' << (by + k) << ' '
        << (bx - k) << ',' << by << "\" fill=\"" << svgColor(st.outline) << "\"/>";
    }
    const std::string label = itemLabel(s.steps, s.current, li, true);
    std::string shown = label;
    {  // rough cut at ~7 px a glyph so the label stays inside the box
      const size_t maxGlyphs = size_t(std::max(1.0f, (w - 8) / 7.0f));
      size_t glyphs = 0, k = 0;
      while (k < shown.size() && glyphs < maxGlyphs) {
        ++k;
        while (k < shown.size() && (static_cast<unsigned char>(shown[k]) & 0xC0) == 0x80) ++k;
        ++glyphs;
      }
      if (k < shown.size()) shown = shown.substr(0, k) + "\xE2\x80\xA6";
    }
    o << "<text x=\"" << cx(li) << "\" y=\"" << cy(li) << "\" font-size=\"13\" text-anchor=\"middle\" "
      << "dominant-baseline=\"central\" fill=\"" << svgColor(st.text) << '"'
      << (st.strike ? " text-decoration=\"line-through\"" : "") << '>' << markup_escape(shown) << "</text>";
    if (st.tag) {
      if (li.kind == LayoutKind::Bonus)
        o << "<text x=\"" << (x + w + 9) << "\" y=\"" << cy(li) << "\" font-size=\"10\" dominant-baseline=\"central\" fill=\""
          << svgColor(st.outline) << "\">" << st.tag << "</text>";
      else
        o << "<text x=\"" << x << "\" y=\"" << (y - 3) << "\" font-size=\"10\" fill=\"" << svgColor(st.outline) << "\">"
          << st.tag << "</text>";
    }
    o << "<title>" << markup_escape(label) << "</title></g>\n";
  }
  o << "</svg>\n";

  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
  const std::string doc = o.str();
  return f.write(doc.data(), qint64(doc.size())) == qint64(doc.size());
}

}  // namespace specscope::ui
