#!/usr/bin/env bash
# One command: install what is missing, build everything, run the whole test suite and print ctest's summary, then
# the sanitizer builds' (scripts/sanitize.sh). Exits non-zero when any test fails.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/install-deps.sh" --gui
# Where the project's Python venv exists, ctest also runs the training recipes' smoke tests (tests/CMakeLists.txt);
# their corpus-builder part reads a few small Debian packages: install them too, so those tests run, not skip.
venv=${SPECSCOPE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/specscope/venv}
if [[ -x "$venv/bin/python" ]]; then "$here/training/corpus/fetch_sources.sh"; fi
"$here/scripts/build.sh"
build=${SPECSCOPE_BUILD_DIR:-$here/build}
cd "$build"
status=0
ctest --output-on-failure -j "${SPECSCOPE_JOBS:-$(nproc)}" --timeout 900 || status=1
# Then the sanitizer builds: ASan+UBSan over the engine, session and CLI tests and every fuzz target's committed corpus
# (replayed against the ASan build's own libraries: fuzz/CMakeLists.txt), TSan over the threaded ones
# (scripts/sanitize.sh). SPECSCOPE_SANITIZE=asan, tsan or none runs fewer, e.g. for a quick local run. Fuzzing for new
# inputs with libFuzzer is a separate, longer run (scripts/fuzz-replay.sh builds the clang targets).
sanitize=${SPECSCOPE_SANITIZE:-all}
if [[ $sanitize == none ]]; then
  echo "[setup-and-test] sanitizer builds not run (SPECSCOPE_SANITIZE=none)"
else
  "$here/scripts/sanitize.sh" "$sanitize" || status=1
fi
exit $status
