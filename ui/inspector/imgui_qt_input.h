#pragma once
// A small Qt-to-Dear-ImGui input adapter for ImGui 1.86 (Debian's libimgui-dev; no Qt backend exists there).
// 1.86 predates the input-event queue of 1.87 (io.AddKeyEvent / AddMousePosEvent do not exist): a backend
// writes state into ImGuiIO before each NewFrame — io.MousePos, io.MouseDown[], io.MouseWheel, io.KeysDown[]
// indexed through io.KeyMap[], io.KeyCtrl/KeyShift/KeyAlt/KeySuper — and queues text with
// AddInputCharactersUTF8 and focus with AddFocusEvent. This adapter records Qt events as they come (no ImGui
// context needs to be current then) and writes them out in apply(), just before NewFrame. Because frames are
// only drawn on demand, a press and its release that fall between two frames are latched: the frame still sees
// the button (or key) down once, then up, so a quick click is never lost.
#include <QSizeF>
#include <QString>
#include <QtGlobal>
#include <array>
#include <string>

class QEvent;
struct ImGuiIO;

namespace specscope::ui {

class ImGuiQtInput {
 public:
  // Fills io.KeyMap (ImGuiKey_* -> this adapter's key indices) and names the platform backend. Once per
  // ImGui context.
  static void setupIo(ImGuiIO& io);
  // The io.KeysDown[] index used for a Qt key (Qt::Key), or -1 when it is not mapped. Letters A-Z map to
  // 'A'..'Z', digits to '0'..'9', so ImGui::IsKeyPressed(keyIndex(Qt::Key_F)) works for any of them.
  static int keyIndex(int qtKey);

  // Records a Qt input event: mouse move/press/double-click/release, wheel, key press/release (with text),
  // focus in/out, enter/leave. Returns true when it was one of them (the caller then repaints).
  bool handle(const QEvent* e);

  // Writes the recorded state into io: display size in device-independent pixels, framebuffer scale from the
  // device pixel ratio (HiDPI), delta time, mouse, wheel, keys, modifiers, text and focus; clears latches.
  void apply(ImGuiIO& io, QSizeF logicalSize, qreal devicePixelRatio, float deltaSeconds);

  bool mouseInside() const { return inside_; }
  // A latched press or release is still to be shown: one more frame is needed.
  bool pending() const;

 private:
  static constexpr int kButtons = 5;
  static constexpr int kKeys = 512;
  float mouseX_ = -1, mouseY_ = -1;
  bool inside_ = false;
  std::array<bool, kButtons> down_{}, pressed_{};
  float wheel_ = 0, wheelH_ = 0;
  std::array<bool, kKeys> keyDown_{}, keyPressed_{};
  bool ctrl_ = false, shift_ = false, alt_ = false, super_ = false;
  std::string text_;  // UTF-8 typed since the last frame
  int focusEvent_ = -1;  // -1 none, 0 lost, 1 gained
};

}  // namespace specscope::ui
