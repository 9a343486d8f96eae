# Precompiled headers. Most sources include nlohmann/json (4 s to parse at -O0 on the 2-core Zen 3 host), spdlog
# (2 s) and, in tests/, GoogleTest (2.7 s): in a clean build that parsing was about half of the compile time, paid
# once per source in each of the test command's builds (release, ASan+UBSan, TSan). A target's precompiled header
# parses them once for all of its sources. Only third-party and standard headers go in, never the project's own,
# so an edit to an engine header rebuilds what includes it, as before. SPECSCOPE_PCH=OFF builds without.
option(SPECSCOPE_PCH "Precompile the third-party and standard headers each target's sources share" ON)

set(SPECSCOPE_PCH_HEADERS
  <nlohmann/json.hpp> <spdlog/spdlog.h>
  <algorithm> <array> <atomic> <chrono> <cmath> <cstdint> <cstring> <filesystem> <fstream> <functional> <map>
  <memory> <mutex> <optional> <random> <set> <sstream> <string> <string_view> <thread> <unordered_map> <vector>)

# specscope_precompile(TARGET [EXTRA_HEADERS...]): TARGET's C++ sources get the shared headers (and any extra ones,
# e.g. <gtest/gtest.h> for the tests) precompiled. For targets of C++ sources only (the CUDA backend has none).
function(specscope_precompile target)
  if(NOT SPECSCOPE_PCH)
    return()
  endif()
  set(headers ${SPECSCOPE_PCH_HEADERS} ${ARGN})
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()

# specscope_reuse_precompiled(TARGET FROM): TARGET uses FROM's precompiled header instead of building its own (one
# source per test executable: a header of its own would cost more than it saves). Both must be compiled with the
# same flags, or GCC ignores the header and parses the sources' includes as usual.
function(specscope_reuse_precompiled target from)
  if(SPECSCOPE_PCH)
    target_precompile_headers(${target} REUSE_FROM ${from})
  endif()
endfunction()
