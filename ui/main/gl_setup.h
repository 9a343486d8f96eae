#pragma once
// What every process that shows the inspector must do before creating its QApplication: ask for an OpenGL
// 3.3 core context (ImGui's OpenGL 3 backend needs 3.x; Mesa gives 3.3 core when asked, under Xvfb too) and
// share contexts between the inspectors of one window (the main one and the compare miniatures).
namespace specscope::ui {

void set_opengl_defaults();

}  // namespace specscope::ui
