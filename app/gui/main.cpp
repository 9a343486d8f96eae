// specscope: the desktop app. Opens on the default model with no configuration.
#include <QApplication>
#include <QSurfaceFormat>

#include "app/cli/commands.h"
#include "ui/main/main_window.h"

int main(int argc, char** argv) {
  // ImGui's OpenGL 3 backend needs a 3.x context; Mesa gives 3.3 core when asked (and under Xvfb).
  QSurfaceFormat fmt;
  fmt.setVersion(3, 3);
  fmt.setProfile(QSurfaceFormat::CoreProfile);
  QSurfaceFormat::setDefaultFormat(fmt);
  QApplication::setAttribute(Qt::AA_ShareOpenGLContexts);
  QApplication app(argc, argv);
  QApplication::setApplicationName("SpecScope");
  QApplication::setOrganizationName("SpecScope");
  QApplication::setApplicationVersion(SPECSCOPE_VERSION);
  specscope::cli::setup_logging();
  specscope::ui::MainWindow w;
  w.show();
  return app.exec();
}
