# Finds the Debian packages SpecScope builds against (see scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(spdlog REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)

# CUDA: AUTO builds the backend when a CUDA compiler is found; ON insists; OFF skips it.
set(SPECSCOPE_HAVE_CUDA OFF)
if(NOT SPECSCOPE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(SPECSCOPE_HAVE_CUDA ON)
  elseif(SPECSCOPE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SPECSCOPE_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "SpecScope CUDA backend: ${SPECSCOPE_HAVE_CUDA}")

# The desktop app: Qt 6 (widgets, OpenGL widgets, charts), Dear ImGui and OpenGL. AUTO builds it when all
# are installed (scripts/install-deps.sh --gui); ON insists.
set(SPECSCOPE_HAVE_GUI OFF)
if(NOT SPECSCOPE_GUI STREQUAL "OFF")
  find_package(Qt6 6.2 QUIET COMPONENTS Widgets OpenGLWidgets Charts Test)
  find_package(OpenGL QUIET)
  pkg_check_modules(IMGUI QUIET IMPORTED_TARGET imgui)
  if(Qt6_FOUND AND OpenGL_FOUND AND IMGUI_FOUND AND EXISTS /usr/share/doc/libimgui-dev/examples/backends/imgui_impl_opengl3.cpp)
    set(SPECSCOPE_HAVE_GUI ON)
  elseif(SPECSCOPE_GUI STREQUAL "ON")
    message(FATAL_ERROR "SPECSCOPE_GUI=ON but Qt 6 (Widgets, OpenGLWidgets, Charts, Test), OpenGL or libimgui-dev is missing: "
                        "run scripts/install-deps.sh --gui")
  endif()
endif()
message(STATUS "SpecScope desktop app: ${SPECSCOPE_HAVE_GUI}")
