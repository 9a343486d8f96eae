#include "ui/main/gl_setup.h"

#include <QCoreApplication>
#include <QSurfaceFormat>

namespace specscope::ui {

void set_opengl_defaults() {
  QSurfaceFormat fmt;
  fmt.setVersion(3, 3);
  fmt.setProfile(QSurfaceFormat::CoreProfile);
  QSurfaceFormat::setDefaultFormat(fmt);
  QCoreApplication::setAttribute(Qt::AA_ShareOpenGLContexts);
}

}  // namespace specscope::ui
