// specscope-cli: the command-line face of the engine. Each subcommand lives in its own file.
#include <cstdio>
#include <string>

#include "app/cli/commands.h"
#include "engine/util/error.h"
#ifdef SPECSCOPE_HAVE_CUDA
#include "kernels/cuda_backend.h"
#endif

int main(int argc, char** argv) {
  using namespace specscope::cli;
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  std::string sub = argv[1];
  if (sub == "--help" || sub == "-h" || sub == "help") {
    print_usage(stdout);
    return 0;
  }
  setup_logging();
#ifdef SPECSCOPE_HAVE_CUDA
  specscope::cuda::register_backend();  // used when a device is visible (--backend auto|cuda)
#endif
  try {
    Args args(argc - 2, argv + 2);
    apply_global_options(args);
    return dispatch(sub, args);
  } catch (const specscope::InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 1;
  }
}
