// specscope: the desktop app. Opens on the default model with no configuration.
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
  specscope::ui::MainWindow w;
  w.show();
  return app.exec();
}
