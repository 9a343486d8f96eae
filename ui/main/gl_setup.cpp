#include "ui/main/gl_setup.h"

#include <QCoreApplication>
#include <QSurfaceFormat>

namespace specscope::ui {

void set_opengl_defaults() {
  // Mesa's software rasterizer (llvmpipe) renders on its own thread pool, one thread per core, which competes
  // with the decoder's threads and hides drawing's CPU from the frame budget (frame_budget.h). Rendering on the
  // GUI thread makes the cost visible and bounded. Hardware drivers ignore the variable; users may override it.
  if (qEnvironmentVariableIsEmpty("LP_NUM_THREADS")) qputenv("LP_NUM_THREADS", "0");
  QSurfaceFormat fmt;
  fmt.setVersion(3, 3);
  fmt.setProfile(QSurfaceFormat::CoreProfile);
  QSurfaceFormat::setDefaultFormat(fmt);
  QCoreApplication::setAttribute(Qt::AA_ShareOpenGLContexts);
}

}  // namespace specscope::ui
