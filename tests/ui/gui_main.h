#pragma once
// main() for a GUI test executable under Xvfb: the user's QSettings and session store kept out (a home of the
// test's own), OpenGL defaults as the app sets them, then every test. One line per file:
//   SPECSCOPE_GUI_TEST_MAIN("streaming")
#include <gtest/gtest.h>
#include <unistd.h>

#include <QApplication>
#include <filesystem>
#include <string>

#include "ui/main/gl_setup.h"

namespace specscope::test {

inline int run_gui_tests(int argc, char** argv, const std::string& name) {
  const auto home = std::filesystem::temp_directory_path() / ("specscope-gui-" + name + "-" + std::to_string(getpid()));
  std::filesystem::create_directories(home);
  qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString((home / "config").string()));
  qputenv("XDG_DATA_HOME", QByteArray::fromStdString((home / "data").string()));
  specscope::ui::set_opengl_defaults();
  QApplication app(argc, argv);
  QApplication::setOrganizationName("SpecScopeTest");
  QApplication::setApplicationName(QString::fromStdString("SpecScopeTest-" + name));
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  std::error_code ec;
  std::filesystem::remove_all(home, ec);
  return rc;
}

}  // namespace specscope::test

#define SPECSCOPE_GUI_TEST_MAIN(name) \
  int main(int argc, char** argv) { return specscope::test::run_gui_tests(argc, argv, name); }
