// specscope: the desktop app. Opens on the default model with no configuration.
#ifdef SPECSCOPE_HAVE_CUDA
#include "kernels/cuda_backend.h"
#endif
#include <QApplication>

#include "app/cli/commands.h"
#include "ui/main/gl_setup.h"
#include "ui/main/main_window.h"

int main(int argc, char** argv) {
  specscope::ui::set_opengl_defaults();
  QApplication app(argc, argv);
  QApplication::setApplicationName("SpecScope");
  QApplication::setOrganizationName("SpecScope");
  QApplication::setApplicationVersion(SPECSCOPE_VERSION);
  specscope::cli::setup_logging();
#ifdef SPECSCOPE_HAVE_CUDA
  specscope::cuda::register_backend();
#endif
  specscope::ui::MainWindow w;
  w.show();
  return app.exec();
}
