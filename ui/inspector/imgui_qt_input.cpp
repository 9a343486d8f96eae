#include "ui/inspector/imgui_qt_input.h"

#include <imgui.h>

#include <QEvent>
#include <QFocusEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QWheelEvent>
#include <algorithm>
#include <cfloat>

namespace specscope::ui {

namespace {

// Key indices: printable ASCII keys use their code (Space 32, '0'..'9', 'A'..'Z'); the rest start at 256.
enum : int {
  kTab = 256, kLeft, kRight, kUp, kDown, kPageUp, kPageDown, kHome, kEnd, kInsert, kDelete, kBackspace,
  kReturn, kEscape, kKeypadEnter, kShift, kControl, kAlt, kMeta,
};

int mouseButtonIndex(Qt::MouseButton b) {
  switch (b) {
    case Qt::LeftButton: return 0;
    case Qt::RightButton: return 1;
    case Qt::MiddleButton: return 2;
    case Qt::BackButton: return 3;
    case Qt::ForwardButton: return 4;
    default: return -1;
  }
}

}  // namespace

void ImGuiQtInput::setupIo(ImGuiIO& io) {
  io.BackendPlatformName = "specscope_imgui_qt";
  io.KeyMap[ImGuiKey_Tab] = kTab;
  io.KeyMap[ImGuiKey_LeftArrow] = kLeft;
  io.KeyMap[ImGuiKey_RightArrow] = kRight;
  io.KeyMap[ImGuiKey_UpArrow] = kUp;
  io.KeyMap[ImGuiKey_DownArrow] = kDown;
  io.KeyMap[ImGuiKey_PageUp] = kPageUp;
  io.KeyMap[ImGuiKey_PageDown] = kPageDown;
  io.KeyMap[ImGuiKey_Home] = kHome;
  io.KeyMap[ImGuiKey_End] = kEnd;
  io.KeyMap[ImGuiKey_Insert] = kInsert;
  io.KeyMap[ImGuiKey_Delete] = kDelete;
  io.KeyMap[ImGuiKey_Backspace] = kBackspace;
  io.KeyMap[ImGuiKey_Space] = ' ';
  io.KeyMap[ImGuiKey_Enter] = kReturn;
  io.KeyMap[ImGuiKey_Escape] = kEscape;
  io.KeyMap[ImGuiKey_KeyPadEnter] = kKeypadEnter;
  io.KeyMap[ImGuiKey_A] = 'A';
  io.KeyMap[ImGuiKey_C] = 'C';
  io.KeyMap[ImGuiKey_V] = 'V';
  io.KeyMap[ImGuiKey_X] = 'X';
  io.KeyMap[ImGuiKey_Y] = 'Y';
  io.KeyMap[ImGuiKey_Z] = 'Z';
}

int ImGuiQtInput::keyIndex(int qtKey) {
  if (qtKey >= Qt::Key_A && qtKey <= Qt::Key_Z) return 'A' + (qtKey - Qt::Key_A);
  if (qtKey >= Qt::Key_0 && qtKey <= Qt::Key_9) return '0' + (qtKey - Qt::Key_0);
  switch (qtKey) {
    case Qt::Key_Space: return ' ';
    case Qt::Key_Tab: case Qt::Key_Backtab: return kTab;
    case Qt::Key_Left: return kLeft;
    case Qt::Key_Right: return kRight;
    case Qt::Key_Up: return kUp;
    case Qt::Key_Down: return kDown;
    case Qt::Key_PageUp: return kPageUp;
    case Qt::Key_PageDown: return kPageDown;
    case Qt::Key_Home: return kHome;
    case Qt::Key_End: return kEnd;
    case Qt::Key_Insert: return kInsert;
    case Qt::Key_Delete: return kDelete;
    case Qt::Key_Backspace: return kBackspace;
    case Qt::Key_Return: return kReturn;
    case Qt::Key_Escape: return kEscape;
    case Qt::Key_Enter: return kKeypadEnter;
    case Qt::Key_Shift: return kShift;
    case Qt::Key_Control: return kControl;
    case Qt::Key_Alt: return kAlt;
    case Qt::Key_Meta: return kMeta;
    default: return -1;
  }
}

bool ImGuiQtInput::handle(const QEvent* e) {
  const auto modifiers = [this](Qt::KeyboardModifiers m) {
    ctrl_ = m & Qt::ControlModifier;
    shift_ = m & Qt::ShiftModifier;
    alt_ = m & Qt::AltModifier;
    super_ = m & Qt::MetaModifier;
  };
  switch (e->type()) {
    case QEvent::MouseMove:
    case QEvent::MouseButtonPress:
    case QEvent::MouseButtonDblClick:
    case QEvent::MouseButtonRelease: {
      const auto* me = static_cast<const QMouseEvent*>(e);
      const QPointF p = me->position();  // device-independent pixels
      mouseX_ = float(p.x()), mouseY_ = float(p.y());
      inside_ = true;
      modifiers(me->modifiers());
      const int b = mouseButtonIndex(me->button());
      if (b >= 0 && e->type() != QEvent::MouseMove) {
        const bool press = e->type() != QEvent::MouseButtonRelease;
        down_[size_t(b)] = press;
        if (press) pressed_[size_t(b)] = true;
      }
      return true;
    }
    case QEvent::Wheel: {
      const auto* we = static_cast<const QWheelEvent*>(e);
      const QPoint a = we->angleDelta();  // 1/8 degree; one notch = 120
      if (!a.isNull()) {
        wheel_ += float(a.y()) / 120.0f;
        wheelH_ += float(a.x()) / 120.0f;
      } else {
        const QPoint px = we->pixelDelta();  // touchpads without angle deltas: ~ 20 px a notch
        wheel_ += float(px.y()) / 20.0f;
        wheelH_ += float(px.x()) / 20.0f;
      }
      const QPointF p = we->position();
      mouseX_ = float(p.x()), mouseY_ = float(p.y());
      inside_ = true;
      modifiers(we->modifiers());
      return true;
    }
    case QEvent::KeyPress:
    case QEvent::KeyRelease: {
      const auto* ke = static_cast<const QKeyEvent*>(e);
      modifiers(ke->modifiers());
      const bool press = e->type() == QEvent::KeyPress;
      // X11 auto-repeat sends release+press pairs: keep the key down and let ImGui repeat it itself.
      if (!(ke->isAutoRepeat() && !press)) {
        const int k = keyIndex(ke->key());
        if (k >= 0 && k < kKeys) {
          keyDown_[size_t(k)] = press;
          if (press) keyPressed_[size_t(k)] = true;
        }
      }
      if (press && !(ke->modifiers() & (Qt::ControlModifier | Qt::MetaModifier))) {
        const QString t = ke->text();
        bool printable = !t.isEmpty();
        for (QChar c : t) printable = printable && c.unicode() >= 0x20 && c.unicode() != 0x7F;
        if (printable) text_ += t.toStdString();
      }
      return true;
    }
    case QEvent::FocusIn:
      focusEvent_ = 1;
      return true;
    case QEvent::FocusOut:
      focusEvent_ = 0;
      keyDown_.fill(false);
      down_.fill(false);
      ctrl_ = shift_ = alt_ = super_ = false;
      return true;
    case QEvent::Enter:
      inside_ = true;
      return true;
    case QEvent::Leave:
      inside_ = false;
      return true;
    default:
      return false;
  }
}

bool ImGuiQtInput::pending() const {
  for (size_t i = 0; i < down_.size(); ++i)
    if (pressed_[i]) return true;
  for (size_t i = 0; i < keyDown_.size(); ++i)
    if (keyPressed_[i]) return true;
  return wheel_ != 0 || wheelH_ != 0 || !text_.empty() || focusEvent_ >= 0;
}

void ImGuiQtInput::apply(ImGuiIO& io, QSizeF logicalSize, qreal devicePixelRatio, float deltaSeconds) {
  io.DisplaySize = ImVec2(float(logicalSize.width()), float(logicalSize.height()));
  const float dpr = float(devicePixelRatio > 0 ? devicePixelRatio : 1.0);
  io.DisplayFramebufferScale = ImVec2(dpr, dpr);
  io.DeltaTime = std::max(deltaSeconds, 1e-4f);  // ImGui asserts DeltaTime > 0

  if (focusEvent_ >= 0) io.AddFocusEvent(focusEvent_ == 1);
  focusEvent_ = -1;

  // Keep the last position while a button is held outside the widget (a drag); else none when outside.
  const bool anyDown = std::any_of(down_.begin(), down_.end(), [](bool d) { return d; });
  io.MousePos = (inside_ || anyDown) ? ImVec2(mouseX_, mouseY_) : ImVec2(-FLT_MAX, -FLT_MAX);
  for (int b = 0; b < kButtons; ++b) {
    io.MouseDown[b] = down_[size_t(b)] || pressed_[size_t(b)];
    pressed_[size_t(b)] = false;
  }
  io.MouseWheel = wheel_;
  io.MouseWheelH = wheelH_;
  wheel_ = wheelH_ = 0;

  for (int k = 0; k < kKeys; ++k) {
    io.KeysDown[k] = keyDown_[size_t(k)] || keyPressed_[size_t(k)];
    keyPressed_[size_t(k)] = false;
  }
  io.KeyCtrl = ctrl_;
  io.KeyShift = shift_;
  io.KeyAlt = alt_;
  io.KeySuper = super_;
  if (!text_.empty()) io.AddInputCharactersUTF8(text_.c_str());
  text_.clear();
}

}  // namespace specscope::ui
